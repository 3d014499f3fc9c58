/* A fixed release at 3 requests x 4 pages: vLLM NIXL push, fixed
 * (spec/variants/vllm-nixl-push-fixed.toml): a pending reject retired at admission on both
 * sides (#38935), the abort status preserved (#36612), deferred release of an aborted
 * transfer's pages on the ACK sent after its writes drained (#38961). No timeout.
 * The transitions are kvproof's actions: see handoff_body.pml.
 *   spin -a fixed_3x4.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan
 * reports no errors: every reachable state keeps the four invariants.
 */
#define HONOR 1
#define PLACEHOLDER 0
#define SOA 0
#define IMMEDIATE 0
#define PREFIX 1
#include "handoff_body.pml"
