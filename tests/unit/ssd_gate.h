/* ssd_gate.h - hold an SSD tier's writer still, so that a unit test can
 * fill its write queue and see what a chunk offered then becomes. */
#ifndef TIERFS_TEST_SSD_GATE_H
#define TIERFS_TEST_SSD_GATE_H

#include "tiers/ssd_tier.h"

/* Queue a 10-byte chunk ("gate", ETag "e", index 0) whose release blocks
 * the writer until ssd_gate_open(), then calls then(its buffer) (which
 * must free it): the jobs queued after it stay queued.  The test fails
 * when the tier does not queue it. */
void ssd_gate_close(struct ssd_tier *t, ssd_tier_release_fn then);
/* Let the writer go on. */
void ssd_gate_open(void);

#endif
