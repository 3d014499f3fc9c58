/* The incident at 3 requests x 4 pages: SGLang v0.5.19 (spec/variants/sglang-0.5.19-pd.toml).
 * #30233: the disaggregation queues read finished(), not to_finish, so a prompt over
 * prefill's limit becomes a 1-token placeholder that is prefilled, one page written,
 * Success reported; decode commits and reads pages never written (isolation).
 * Release is immediate (#24527), Success overwrites a pending abort (before #36612).
 * The transitions are kvproof's actions: see handoff_body.pml.
 *   spin -a incident_3x4.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan      (DFS)
 *   spin -a incident_3x4.pml && gcc -O2 -DSAFETY -DBFS -o pan pan.c && ./pan (shortest)
 * finds "assertion violated" of the isolation assert (and, at larger depths, the others).
 */
#define HONOR 0
#define PLACEHOLDER 1
#define SOA 1
#define IMMEDIATE 1
#define PREFIX 0
#include "handoff_body.pml"
