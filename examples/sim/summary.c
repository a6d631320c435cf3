/* tl-sim's summary and verdict at the end of a run (docs/sim.md, "Reading the summary"). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim.h"

void summary(sim *m, double wall, bool drained) {
  counters *c = &m->c;
  uint64_t attempts = 0;
  for (int i = 0; i < SIM_OUT_COUNT; i++)
    attempts += c->outcome[i];
  uint64_t parts = 0;
  for (uint32_t j = 0; j < m->jobs_submitted; j++)
    for (uint32_t k = 0; k < m->jobs[j].nstages; k++)
      parts += m->jobs[j].stages[k].nparts;
  printf("\n== tl-sim summary (seed %" PRIu64 ") ==\n", m->o.seed);
  printf("cluster             %" PRIu32 " executors x %" PRIu32 " cores, %" PRIu32
         " per host, %" PRIu32 " hosts per rack; %zu executors in all\n",
         m->o.executors, m->o.cores, m->o.per_host, m->o.hosts_per_rack, m->nexecs);
  gpu_summary(m);
  pools_summary(m);
  if (m->o.speculation)
    printf("speculation         %" PRIu64 " copies launched; threshold %.3f s, decommission "
           "kill interval %.3f s (0: off)\n",
           c->speculative_launches, m->o.spec_threshold_s, m->o.decom_kill_s);
  printf("jobs                %" PRIu32 " submitted: %" PRIu64 " succeeded, %" PRIu64 " failed\n",
         m->jobs_submitted, c->jobs_succeeded, c->jobs_failed);
  printf("tasks               %" PRIu64 " partitions in %zu task sets\n", parts, m->nts);
  printf("attempts            %" PRIu64 " ended: %" PRIu64 " success, %" PRIu64
         " zombie success, %" PRIu64 " failed, %" PRIu64 " fetch failed, %" PRIu64
         " killed, %" PRIu64 " lost\n",
         attempts, c->outcome[SIM_OUT_SUCCESS], c->outcome[SIM_OUT_ZOMBIE],
         c->outcome[SIM_OUT_FAILED], c->outcome[SIM_OUT_FETCH_FAILED], c->outcome[SIM_OUT_KILLED],
         c->outcome[SIM_OUT_LOST]);
  printf("losses              %" PRIu64 " crashes, %" PRIu64 " two-phase (%" PRIu64
         " reasons came, %" PRIu64 " pending-loss timeouts, %" PRIu64
         " late reasons refused), %" PRIu64 " hangs (%" PRIu64 " heartbeat timeouts), %" PRIu64
         " decommissioned\n",
         c->crashes, c->crashes2, c->reasons, c->pending_timeouts, c->reasons_refused, c->hangs,
         c->hb_timeouts, c->decommissions);
  printf("joins               %" PRIu64 " replacements, %" PRIu64 " late\n", c->joins_replace,
         c->joins_late);
  printf("retries             %" PRIu64 " task sets failed, %" PRIu64 " fetch failures, %" PRIu64
         " stage retries, %" PRIu64 " map outputs re-run (TL_END_RESUBMITTED)\n",
         c->tasksets_failed, c->fetch_failures, c->stage_retries, c->resubmitted);
  printf("resubmissions       %" PRIu64 " parent stages after fetch failures, %" PRIu64
         " stages whose outputs were lost, %" PRIu64 " tl_partition_completed\n",
         c->parent_resubmits, c->output_resubmits, c->partition_completed);
  printf("bad updates         %" PRIu64 " sent: %" PRIu64 " ESTALE, %" PRIu64 " EGONE, %" PRIu64
         " accepted or otherwise answered\n",
         c->bad_sent, c->bad_stale, c->bad_gone, c->bad_other);
  printf("zombies drained     %" PRIu64 " task sets (%" PRIu64 " failed or fetch-failed) became "
         "zombie with attempts in flight, drained to zero (%" PRIu64
         " attempts ended after) and were released: SPARK-18553's shape\n",
         c->zombies_drained, c->zombies_failed_drained, c->zombie_attempts_drained);
  printf("ledger              launched %" PRIu64 ", succeeded %" PRIu64 ", failed %" PRIu64
         ", killed %" PRIu64 ", stale %" PRIu64 ", released %" PRIu64 "\n",
         m->st.launched, m->st.succeeded, m->st.failed, m->st.killed, m->st.stale_updates,
         m->st.tasksets_released);
  printf("%-27s %10s %10s\n", "map (tl_stats)", "peak", "final");
  for (size_t i = 0; i < NSTATS; i++)
    printf("  %-25s %10zu %10zu\n", stat_names[i], m->stat_peak[i], *stat_field(&m->st, i));
  printf("simulated time      %.3f s\n", (double)m->now / 1e9);
  printf("events              %" PRIu64 "\n", c->events);
  if (m->o.check_every == 1)
    printf("tl_check            after every event: %" PRIu64 " checks, %s\n", c->checks,
           m->check_failed ? m->check_why : "all clean");
  else if (m->o.check_every == 0)
    printf("tl_check            at the end only: %s\n", m->check_failed ? m->check_why : "clean");
  else
    printf("tl_check            after every %" PRIu32 " events and at the end: %" PRIu64
           " checks, %s\n",
           m->o.check_every, c->checks, m->check_failed ? m->check_why : "all clean");
  printf("wall time           %.3f s\n", wall);
  printf("wall rate           %.0f simulated tasks per wall second\n",
         wall > 0 ? (double)attempts / wall : 0.0);
  printf("problems            %" PRIu64 "\n", m->problems);
  if (drained && !m->check_failed && m->problems == 0)
    printf("verdict             DRAINED: every task set released, all %zu payloads and every "
           "result handed back, tl_check clean\n",
           m->nts);
  else if (m->check_failed)
    printf("verdict             BROKEN: tl_check failed: %s\n", m->check_why);
  else if (!drained)
    printf("verdict             RETAINED: %zu task sets were still held at %.3f s (explained "
           "above); once the executors stopped, %zu payloads and %zu results came back only "
           "through tl_scheduler_free\n",
           m->retained, (double)m->now / 1e9, m->payloads_at_end, m->results_at_end);
  else
    printf("verdict             BROKEN: %" PRIu64 " problems (on stderr)\n", m->problems);
}
