/* taskledger-ffi.h: the declarations of taskledger.h for foreign-function interfaces that
 * read C without a preprocessor (cffi's cdef, LuaJIT's ffi.cdef). Generated from
 * taskledger.h by tools/gen-ffi-header.py: do not edit. No include guard, no includes: it
 * assumes <stdbool.h>, <stddef.h> and <stdint.h>. The contracts are taskledger.h's. */

#define TL_VERSION_MAJOR 0
#define TL_VERSION_MINOR 2
#define TL_VERSION_PATCH 0
#define TL_VERSION_HEX 512

#define TL_ID_MAX 256
#define TL_HOST_MAX 256

#define TL_RESOURCE_NAME_MAX 64
#define TL_ADDRESS_MAX 64
#define TL_RESOURCES_MAX 16
#define TL_RESOURCE_ADDRESSES_MAX 1024
#define TL_SHARE_MAX 32
#define TL_TASK_GRANTS_MAX 16
#define TL_SHARE_UNIT 144403552893600

#define TL_TAG_MAX 128
#define TL_TAGS_MAX 16

#define TL_PLACE_MAX 64

typedef enum tl_spread {
  TL_SPREAD_NONE = 0,
  TL_SPREAD_HOST = 1,
  TL_SPREAD_EXECUTOR = 2
} tl_spread;

#define TL_TICK_NEVER 18446744073709551615

#define TL_WAIT_INHERIT 18446744073709551615

typedef enum tl_errno {
  TL_OK = 0,
  TL_EINVAL = -1,
  TL_ENOMEM = -2,
  TL_ENOENT = -3,
  TL_EEXIST = -4,
  TL_ESTALE = -5,
  TL_EOWNER = -6,
  TL_EGONE = -7,
  TL_ESTATE = -8,
  TL_EBUSY = -9,
  TL_ECORRUPT = -10,
  TL_EIO = -11,
  TL_ESNAPSHOT = -12,
  TL_EVERSION = -13,
  TL_ECONFIG = -14,
  TL_ERESOURCE = -15,
} tl_errno;

const char *tl_err_name(int err);

const char *tl_strerror(int err);

unsigned int tl_version(void);
const char *tl_version_string(void);

int tl_replace_allocator(void *(*malloc_fn)(size_t), void *(*realloc_fn)(void *, size_t),
                         void *(*calloc_fn)(size_t, size_t), void (*free_fn)(void *));

typedef uint64_t tl_tid;
typedef uint64_t tl_taskset_id;

typedef struct tl_scheduler tl_scheduler;

typedef enum tl_locality {
  TL_PROCESS_LOCAL = 0,
  TL_NODE_LOCAL = 1,
  TL_NO_PREF = 2,
  TL_RACK_LOCAL = 3,
  TL_ANY = 4,
} tl_locality;

typedef enum tl_end_kind {
  TL_END_SUCCESS = 0,
  TL_END_EXCEPTION = 1,
  TL_END_FETCH_FAILED = 2,
  TL_END_KILLED = 3,
  TL_END_COMMIT_DENIED = 4,
  TL_END_RESULT_LOST = 5,
  TL_END_EXECUTOR_LOST = 6,
  TL_END_RESUBMITTED = 7,
  TL_END_RESULT_TOO_LARGE = 8,
} tl_end_kind;

typedef enum tl_executor_state {
  TL_EXECUTOR_ALIVE = 0,
  TL_EXECUTOR_DECOMMISSIONING = 1,
  TL_EXECUTOR_PENDING_LOSS = 2,
  TL_EXECUTOR_REMOVED = 3,
  TL_EXECUTOR_RECOVERING = 4,
} tl_executor_state;

typedef enum tl_loss_kind {
  TL_LOSS_PENDING = 0,
  TL_LOSS_EXITED = 1,
  TL_LOSS_PROCESS_LOST = 2,
  TL_LOSS_HEARTBEAT_TIMEOUT = 3,
  TL_LOSS_KILLED = 4,
  TL_LOSS_DECOMMISSIONED = 5,
  TL_LOSS_PENDING_TIMEOUT = 6,
  TL_LOSS_RECOVERY_TIMEOUT = 7,
} tl_loss_kind;

typedef struct tl_loss_reason {
  tl_loss_kind kind;
  bool caused_by_app;
  int exit_code;
  const char *message;
} tl_loss_reason;

typedef enum tl_sched_mode {
  TL_FIFO = 0,
  TL_FAIR = 1
} tl_sched_mode;

typedef enum tl_delivery {
  TL_DELIVER_INLINE = 0,

  TL_DELIVER_DEFERRED = 1
} tl_delivery;

typedef struct tl_resource {
  const char *name;
  const char *const *addresses;
  uint32_t naddresses;
} tl_resource;

typedef struct tl_resource_request {
  const char *name;
  uint32_t amount;

  uint32_t share;
} tl_resource_request;

typedef struct tl_grant {
  uint16_t resource;
  uint16_t address;
  uint32_t share;
} tl_grant;

typedef struct tl_config {
  tl_sched_mode mode;

  uint32_t cpus_per_task;
  uint32_t max_task_failures;

  uint64_t heartbeat_timeout_ns;
  uint64_t pending_loss_timeout_ns;

  uint64_t recovery_timeout_ns;

  uint64_t restore_tid_floor;

  uint64_t restore_epoch_floor;

  uint32_t max_tombstones;
  uint64_t tombstone_ttl_ns;
  uint64_t max_result_bytes;

  bool speculation;

  uint64_t speculation_interval_ns;
  double speculation_multiplier;

  double speculation_quantile;
  uint64_t speculation_min_runtime_ns;
  uint64_t locality_wait_ns;

  uint64_t locality_wait_process_ns;
  uint64_t locality_wait_node_ns;
  uint64_t locality_wait_rack_ns;

  bool exclude_on_failure;
  uint32_t exclude_max_task_attempts_per_executor;

  uint32_t exclude_max_task_attempts_per_node;
  uint32_t exclude_stage_max_failed_tasks_per_executor;

  uint32_t exclude_stage_max_failed_executors_per_node;

  uint32_t exclude_app_max_failed_tasks_per_executor;

  uint32_t exclude_app_max_failed_executors_per_node;

  uint64_t exclude_timeout_ns;

  uint64_t unschedulable_timeout_ns;

  uint64_t (*clock)(void *ud);

  void *clock_ud;

  void (*journal)(void *ud, const char *line);
  void *journal_ud;

  tl_delivery delivery;

  void (*events_ready)(void *ud);
  void *events_ready_ud;

  uint64_t speculation_task_duration_threshold_ns;

  uint64_t decommission_kill_interval_ns;

  bool pool_auto_create;

  bool offer_shuffle;
  uint64_t offer_shuffle_seed;

} tl_config;

void tl_config_init(tl_config *cfg);

typedef struct tl_task_info {
  tl_tid tid;
  tl_taskset_id taskset;
  uint32_t stage_id;
  uint32_t stage_attempt;
  uint32_t index;
  uint32_t attempt;
  const char *executor_id;
  const char *host;
  tl_locality locality;
  bool speculative;
  void *payload;
  void *executor_ud;

  const tl_grant *grants;

  uint32_t ngrants;
} tl_task_info;

typedef struct tl_task_end {
  tl_end_kind kind;
  bool counts_toward_failures;

  const char *message;

  void *result;
  size_t result_size;
  void (*result_free)(void *);
} tl_task_end;

typedef struct tl_taskset_info {
  tl_taskset_id id;
  uint32_t stage_id;
  uint32_t stage_attempt;
  uint32_t ntasks;
} tl_taskset_info;

typedef struct tl_demand {
  size_t tasks_pending;
  size_t tasks_speculatable;
  size_t attempts_running;
  size_t tasksets_active;
  size_t unschedulable_tasksets;

} tl_demand;

typedef struct tl_callbacks {
  void *ud;

  void (*task_started)(void *ud, const tl_task_info *task);

  void (*task_ended)(void *ud, const tl_task_info *task, const tl_task_end *end);

  void (*taskset_failed)(void *ud, const tl_taskset_info *ts, const char *reason);

  void (*taskset_released)(void *ud, const tl_taskset_info *ts, void *payload);

  void (*executor_added)(void *ud, const char *executor_id, const char *host);

  void (*executor_lost)(void *ud, const char *executor_id, void *executor_ud,
                        const tl_loss_reason *reason);

  void (*speculative_task_submitted)(void *ud, const tl_taskset_info *ts, uint32_t index);

  void (*revive_offers)(void *ud);

  void (*kill_task)(void *ud, tl_tid tid, const char *executor_id, void *executor_ud,
                    bool interrupt, const char *reason);

  bool (*taskset_restored)(void *ud, const tl_taskset_info *ts, void **payload);
  void *(*executor_restored)(void *ud, const char *executor_id, const char *host);

  void (*executor_removed)(void *ud, const char *executor_id, void *executor_ud,
                           const tl_loss_reason *reason);

  void (*taskset_unschedulable)(void *ud, const tl_taskset_info *ts, const char *reason);

  void (*taskset_schedulable)(void *ud, const tl_taskset_info *ts);

  void (*demand_changed)(void *ud, const tl_demand *demand);
} tl_callbacks;

int tl_scheduler_new(const tl_config *cfg, const tl_callbacks *cb, tl_scheduler **out);

int tl_scheduler_free(tl_scheduler *s);

int tl_scheduler_abandon(tl_scheduler *s);

int tl_dispatch(tl_scheduler *s);

int tl_snapshot(tl_scheduler *s, int (*write)(void *ud, const void *buf, size_t n),
                void *ud);

int tl_dispatch_snapshot(tl_scheduler *s,
                         int (*write)(void *ud, const void *buf, size_t n), void *ud);

int tl_scheduler_restore(const tl_config *cfg, const tl_callbacks *cb,
                         int (*read)(void *ud, void *buf, size_t n), void *ud,
                         tl_scheduler **out);

uint64_t tl_epoch(const tl_scheduler *s);

int tl_executor_reconcile(tl_scheduler *s, const char *executor_id, const tl_tid *running,
                          size_t n, tl_tid *unknown, size_t ucap, size_t *nunknown);

typedef struct tl_reconcile_item {
  tl_tid tid;
  tl_taskset_id taskset;
  uint32_t index;
  uint32_t attempt;
  bool speculative;
  bool ended;

} tl_reconcile_item;

int tl_executor_reconcile_items(tl_scheduler *s, const char *executor_id,
                                const tl_reconcile_item *items, size_t n,
                                tl_tid *unknown, size_t ucap, size_t *nunknown);

typedef struct tl_executor_desc {
  const char *id;
  const char *host;
  const char *rack;
  uint32_t cores;
  void *ud;

  uint32_t profile;
  const tl_resource *resources;
  uint32_t nresources;
} tl_executor_desc;

int tl_executor_add(tl_scheduler *s, const tl_executor_desc *d);

int tl_executor_lost(tl_scheduler *s, const char *executor_id,
                     const tl_loss_reason *reason);

int tl_executor_heartbeat(tl_scheduler *s, const char *executor_id);

int tl_executor_decommission(tl_scheduler *s, const char *executor_id,
                             const char *message);

typedef struct tl_executor_status {
  tl_executor_state state;
  uint32_t cores;
  uint32_t free_cores;
  uint32_t running;
  uint32_t frozen;
  char host[TL_HOST_MAX];
  void *ud;
  uint32_t profile;
  uint32_t nresources;
} tl_executor_status;

int tl_executor_get(tl_scheduler *s, const char *executor_id, tl_executor_status *out);

typedef struct tl_executor_info {
  char id[TL_ID_MAX];
  char host[TL_HOST_MAX];
  tl_executor_state state;
  uint32_t cores;
  uint32_t free_cores;
  uint32_t running;
  uint32_t frozen;
  void *ud;
  uint32_t profile;
  uint32_t nresources;
} tl_executor_info;

int tl_executor_list(tl_scheduler *s, tl_executor_info *out, size_t cap, size_t *n);

int tl_executor_frozen(tl_scheduler *s, const char *executor_id, tl_tid *tids, size_t cap,
                       size_t *n);

typedef struct tl_location {
  const char *host;
  const char *executor_id;
} tl_location;

typedef struct tl_task_desc {
  const tl_location *prefs;
  uint32_t nprefs;
} tl_task_desc;

typedef struct tl_taskset_desc {
  uint32_t stage_id;
  uint32_t stage_attempt;
  uint32_t priority;
  uint32_t ntasks;
  uint32_t cpus_per_task;
  void *payload;

  bool shuffle_map;

  bool barrier;

  const char *pool;

  const tl_task_desc *tasks;

  uint32_t profile;
  const tl_resource_request *resources;

  uint32_t nresources;

  uint32_t max_task_failures;

  const char *const *tags;
  uint32_t ntags;

  const char *const *allowed_executors;
  uint32_t nallowed_executors;
  const char *const *allowed_hosts;
  uint32_t nallowed_hosts;
  tl_spread spread;
} tl_taskset_desc;

int tl_submit(tl_scheduler *s, const tl_taskset_desc *d, tl_taskset_id *out);

int tl_pool_add(tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                uint32_t min_share);

#define TL_POOL_DEPTH_MAX 8

int tl_pool_add_child(tl_scheduler *s, const char *parent, const char *name,
                      tl_sched_mode mode, uint32_t weight, uint32_t min_share);

int tl_pool_set(tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                uint32_t min_share);

typedef struct tl_pool_status {
  tl_sched_mode mode;
  uint32_t weight;
  uint32_t min_share;
  uint32_t running;
  uint32_t tasksets;

  uint32_t depth;
  uint32_t children;
  char parent[TL_HOST_MAX];
} tl_pool_status;

int tl_pool_get(tl_scheduler *s, const char *name, tl_pool_status *out);

int tl_kill_task(tl_scheduler *s, tl_tid tid, bool interrupt, const char *reason);

int tl_kill_stage(tl_scheduler *s, uint32_t stage_id, bool interrupt, const char *reason);

int tl_cancel_stage(tl_scheduler *s, uint32_t stage_id, const char *reason);

int tl_cancel_tag(tl_scheduler *s, const char *tag, bool interrupt, const char *reason,
                  size_t *ntasksets);

int tl_kill_tag(tl_scheduler *s, const char *tag, bool interrupt, const char *reason,
                size_t *ntasksets);

int tl_partition_completed(tl_scheduler *s, uint32_t stage_id, uint32_t index);

typedef struct tl_taskset_status {
  tl_taskset_info info;
  bool zombie;
  bool failed;
  uint32_t running;
  uint32_t frozen;
  uint32_t pending;
  uint32_t succeeded;
  uint32_t cpus_per_task;
  uint32_t locality_levels;

  tl_locality locality;

  uint32_t profile;
  uint32_t nresources;
  uint32_t max_task_failures;
  uint32_t ntags;

  uint32_t nallowed_executors;
  uint32_t nallowed_hosts;
  tl_spread spread;
  bool unplaceable;

} tl_taskset_status;

int tl_taskset_get(tl_scheduler *s, tl_taskset_id id, tl_taskset_status *out);

int tl_taskset_list(tl_scheduler *s, tl_taskset_status *out, size_t cap, size_t *n);

typedef struct tl_tag_info {
  char tag[TL_TAG_MAX];
} tl_tag_info;

int tl_taskset_tags(tl_scheduler *s, tl_taskset_id id, tl_tag_info *out, size_t cap,
                    size_t *n);

typedef struct tl_place_info {
  bool host;
  char name[TL_HOST_MAX];
} tl_place_info;

int tl_taskset_placement(tl_scheduler *s, tl_taskset_id id, tl_place_info *out,
                         size_t cap, size_t *n);

typedef struct tl_offer {
  const char *executor_id;
  uint32_t cores;

} tl_offer;

typedef struct tl_launch {
  tl_tid tid;
  tl_taskset_id taskset;
  uint32_t stage_id;
  uint32_t stage_attempt;
  uint32_t index;
  uint32_t attempt;
  uint32_t cpus;
  tl_locality locality;
  size_t offer;

  const char *executor_id;

  void *executor_ud;
  bool speculative;
  uint32_t ngrants;

  void *payload;
  const tl_grant *grants;

} tl_launch;

int tl_resource_offers(tl_scheduler *s, const tl_offer *offers, size_t noffers,
                       tl_launch *out, size_t cap, size_t *nout);

int tl_resource_offers_grants(tl_scheduler *s, const tl_offer *offers, size_t noffers,
                              tl_launch *out, size_t cap, size_t *nout, tl_grant *grants,
                              size_t gcap, size_t *ngrants);

typedef struct tl_resource_info {
  char name[TL_RESOURCE_NAME_MAX];
  uint32_t addresses;
  uint32_t free;
  uint64_t used;

} tl_resource_info;

typedef struct tl_address_info {
  char address[TL_ADDRESS_MAX];
  uint64_t used;
} tl_address_info;

int tl_executor_resources(tl_scheduler *s, const char *executor_id,
                          tl_resource_info *out, size_t cap, size_t *n);

int tl_executor_addresses(tl_scheduler *s, const char *executor_id, uint32_t resource,
                          tl_address_info *out, size_t cap, size_t *n);

int tl_resource_totals(tl_scheduler *s, tl_resource_info *out, size_t cap, size_t *n);

int tl_attempt_grants(tl_scheduler *s, tl_tid tid, tl_grant *out, size_t cap,
                      size_t *n);

typedef enum tl_task_state {
  TL_TASK_RUNNING = 0,
  TL_TASK_FINISHED = 1,
  TL_TASK_FAILED = 2,
  TL_TASK_KILLED = 3,
} tl_task_state;

const char *tl_end_kind_name(tl_end_kind kind);
const char *tl_loss_kind_name(tl_loss_kind kind);
const char *tl_locality_name(tl_locality level);
const char *tl_task_state_name(tl_task_state state);
const char *tl_executor_state_name(tl_executor_state state);

typedef struct tl_update {
  tl_task_state state;
  tl_end_kind failure;

  const char *message;
  void *result;
  size_t result_size;
  void (*result_free)(void *);

  bool no_retry;

} tl_update;

int tl_status_update(tl_scheduler *s, const char *executor_id, tl_tid tid,
                     const tl_update *u);

int tl_status_updates(tl_scheduler *s, const char *executor_id, const tl_tid *tids,
                      const tl_update *updates, size_t n, int *results);

uint64_t tl_tick(tl_scheduler *s);

typedef struct tl_stats {
  size_t executors_alive;
  size_t executors_decommissioning;
  size_t executors_pending_loss;
  size_t executors_recovering;
  size_t tombstones;
  size_t hosts;

  size_t racks;
  size_t pools;
  size_t places;
  size_t tasksets_active;
  size_t tasksets_zombie;
  size_t attempts_running;
  size_t attempts_frozen;
  size_t tasks_pending;
  size_t tasks_speculatable;
  size_t events_queued;
  size_t mem_live_bytes;
  size_t mem_live_blocks;
  uint64_t launched;
  uint64_t succeeded;
  uint64_t failed;
  uint64_t killed;

  uint64_t stale_updates;
  uint64_t rejected_updates;
  uint64_t rejected_offers;
  uint64_t executors_lost;
  uint64_t tasksets_released;

  size_t executors_excluded;

  size_t nodes_excluded;
  size_t tasksets_with_failures;
  size_t tasksets_unschedulable;
  uint64_t excluded_offers;
  uint64_t tasksets_unschedulable_aborted;

  uint64_t pending_loss_timeouts;

  uint64_t recovery_timeouts;

  uint64_t reconciled;
  uint64_t reconcile_lost;

  uint64_t reconcile_unknown;

  uint64_t reconcile_adopted;

  size_t tasksets_unplaceable;

} tl_stats;

void tl_stats_get(tl_scheduler *s, tl_stats *out);

int tl_check(tl_scheduler *s, char *why, size_t len);

int tl_explain_taskset(tl_scheduler *s, tl_taskset_id id, char *buf, size_t len);

int tl_metrics_text(tl_scheduler *s, char *buf, size_t len, size_t *needed);
