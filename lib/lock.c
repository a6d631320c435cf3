/* The scheduler's lock: a word taken with one compare-and-swap, and a mutex and condition
 * variable that only threads which could not get it sleep on (the "mutex 3" of Drepper's
 * "Futexes Are Tricky", with libuv's primitives in place of a futex).
 *
 * state: 0 free; 1 held; 2 held, and some thread may be asleep waiting for it. Taking it when
 * free is one compare-and-swap (acquire); giving it back is one exchange (release), and only
 * when the old state was 2 does the giver take the wait mutex to wake a sleeper. A thread that
 * finds it held backs off first: calls hold it for well under a microsecond, and a thread making
 * several calls in a row finds the ledger's cache lines where it left them, so waiting 32, 64,
 * ... 2,048 pauses between tries (about 4,000 in all: 110 microseconds where a pause takes
 * 27 ns, as on the machines this was measured on, less on others) lets the holder make a few
 * calls in a row instead of handing the lock, and the lines, to the other core at every call,
 * and keeps most waits out of the kernel. Then it sleeps: under the wait mutex it
 * sets the state to 2 and, unless that found the lock free, waits for a signal and tries again.
 * No wakeup is lost: a sleeper holds the wait mutex from the exchange that saw the lock held
 * until it waits, and the giver signals under that mutex.
 *
 * Measured (docs/performance.md): a lock and an unlock cost a handful of instructions instead
 * of about 130 through glibc's pthread_mutex functions, and two threads issuing status updates
 * at once keep about one thread's rate (0.8 to 1.2 of it) instead of falling to 0.6 of it with a
 * plain mutex, whose waiters sleep at once.
 */
#include "internal.h"

/* One step of a busy wait: x86's pause (it also yields the core to a hyperthread sibling). */
static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  atomic_signal_fence(memory_order_seq_cst); /* keeps the wait loop from being optimised away */
#endif
}

int tl__mutex_init(tl__mutex *m) {
  atomic_init(&m->state, 0u);
  if (uv_mutex_init(&m->wait) != 0)
    return -1;
  if (uv_cond_init(&m->wakeup) != 0) {
    uv_mutex_destroy(&m->wait);
    return -1;
  }
  return 0;
}

void tl__mutex_destroy(tl__mutex *m) {
  uv_cond_destroy(&m->wakeup);
  uv_mutex_destroy(&m->wait);
}

void tl__mutex_lock_slow(tl__mutex *m) {
  unsigned spins = 32;
  for (int round = 0; round < 7; round++, spins *= 2) {
    for (unsigned i = 0; i < spins; i++)
      cpu_relax();
    unsigned expected = 0;
    if (atomic_load_explicit(&m->state, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong_explicit(&m->state, &expected, 1u, memory_order_acquire,
                                                memory_order_relaxed))
      return;
  }
  uv_mutex_lock(&m->wait);
  while (atomic_exchange_explicit(&m->state, 2u, memory_order_acquire) != 0)
    uv_cond_wait(&m->wakeup, &m->wait);
  uv_mutex_unlock(&m->wait);
}

void tl__mutex_wake(tl__mutex *m) {
  uv_mutex_lock(&m->wait);
  uv_cond_signal(&m->wakeup);
  uv_mutex_unlock(&m->wait);
}
