/* tl-sim's nested pools and tags (docs/sim.md, "Pools and tags"; --pools): the scheduler runs
 * TL_FAIR with a tree of pools, Spark's fairscheduler.xml in miniature,
 *
 *   prod      FAIR, weight 3, min share 2     research  FIFO, weight 1, min share 0
 *     etl       FIFO, weight 2, min share 1
 *     adhoc     FAIR, weight 1, min share 0
 *
 * and job j's task sets go to the leaf j % 3 (etl, adhoc, research), tagged "job-J" and
 * "group-LEAF" (Spark 3.5's job tags). Every fourth job's arrival (3, 7, 11, ...) cancels the
 * previous job by its tag (tl_cancel_tag, interrupting: the job fails "cancelled by tag", as
 * SparkContext.cancelJobsWithTag fails its jobs), and every fourth from the second (1, 5, 9, ...)
 * kills the running attempts of the research group (tl_kill_tag, not interrupting: they are
 * retried, the task sets go on). Without --pools nothing here runs: a run is what it was.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"

/* The pools, parents before children; leaves are where jobs go. */
static const struct {
  const char *name, *parent;
  tl_sched_mode mode;
  uint32_t weight, min_share;
} pools[] = {
    {"prod", NULL, TL_FAIR, 3, 2},
    {"research", NULL, TL_FIFO, 1, 0},
    {"prod.etl", "prod", TL_FIFO, 2, 1},
    {"prod.adhoc", "prod", TL_FAIR, 1, 0},
};
static const char *const leaves[3] = {"prod.etl", "prod.adhoc", "research"};

void pools_config(const sim *m, tl_config *cfg) {
  if (m->o.pools)
    cfg->mode = TL_FAIR;
}

void pools_init(sim *m) {
  if (!m->o.pools)
    return;
  for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++) {
    int rc =
        pools[i].parent == NULL
            ? tl_pool_add(m->s, pools[i].name, pools[i].mode, pools[i].weight, pools[i].min_share)
            : tl_pool_add_child(m->s, pools[i].parent, pools[i].name, pools[i].mode,
                                pools[i].weight, pools[i].min_share);
    if (rc != TL_OK)
      problem(m, "adding pool %s: %s", pools[i].name, tl_err_name(rc));
  }
}

void pools_request(const sim *m, uint32_t j, sim_pool_tags *pt, tl_taskset_desc *d) {
  if (!m->o.pools)
    return;
  snprintf(pt->job, sizeof pt->job, "job-%" PRIu32, j);
  snprintf(pt->group, sizeof pt->group, "group-%s", leaves[j % 3]);
  pt->tags[0] = pt->job;
  pt->tags[1] = pt->group;
  d->pool = leaves[j % 3];
  d->tags = pt->tags;
  d->ntags = 2;
}

/* The tag calls at job j's arrival (before its stages are submitted). */
void pools_arrive(sim *m, uint32_t j) {
  if (!m->o.pools)
    return;
  if (j % 4 == 3) {
    sim_job *victim = &m->jobs[j - 1];
    char tag[SIM_TAG_MAX];
    snprintf(tag, sizeof tag, "job-%" PRIu32, j - 1);
    if (victim->state == J_RUNNING)
      victim->cancelled = true; /* its stages' failures fail it (dag.c, stage_failed) */
    size_t n = 0;
    int rc = tl_cancel_tag(m->s, tag, true, "cancelled by tag", &n);
    if (rc != TL_OK)
      problem(m, "tl_cancel_tag(%s): %s", tag, tl_err_name(rc));
    m->c.tag_cancels++;
    m->c.tag_cancelled_tasksets += n;
    logf_(m, "tag %s cancelled: %zu task sets", tag, n);
  } else if (j % 4 == 1) {
    size_t n = 0;
    int rc = tl_kill_tag(m->s, "group-research", false, "research preempted", &n);
    if (rc != TL_OK)
      problem(m, "tl_kill_tag(group-research): %s", tl_err_name(rc));
    m->c.tag_kills++;
    m->c.tag_killed_tasksets += n;
    logf_(m, "tag group-research killed: %zu task sets", n);
  }
}

/* At the drained end every pool is empty: nothing runs or waits in any of them. */
void pools_end(sim *m) {
  if (!m->o.pools)
    return;
  for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++) {
    tl_pool_status st;
    int rc = tl_pool_get(m->s, pools[i].name, &st);
    if (rc != TL_OK)
      problem(m, "tl_pool_get(%s): %s", pools[i].name, tl_err_name(rc));
    else if (st.running != 0 || st.tasksets != 0)
      problem(m, "pool %s holds %" PRIu32 " task sets, %" PRIu32 " running at the end",
              pools[i].name, st.tasksets, st.running);
  }
}

void pools_summary(const sim *m) {
  if (!m->o.pools)
    return;
  printf("pools               %zu (2 nested), task sets tagged job and group\n",
         sizeof pools / sizeof pools[0]);
  printf("tags                %" PRIu64 " cancels (%" PRIu64 " task sets, %" PRIu64
         " jobs cancelled), %" PRIu64 " kills (%" PRIu64 " task sets)\n",
         m->c.tag_cancels, m->c.tag_cancelled_tasksets, m->c.jobs_cancelled, m->c.tag_kills,
         m->c.tag_killed_tasksets);
}
