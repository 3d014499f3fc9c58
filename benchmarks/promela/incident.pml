/* The incident, coarser than kvproof's model: one request over prefill's limit, decode
 * reserving from its own copy of the prompt, pages never zeroed (SGLang #30233: the
 * disaggregation queues read finished(), not to_finish; the 1-token placeholder is
 * prefilled, one page written, Success reported, decode commits and reads every page).
 * No faults, no aborts, no second request: just the window.
 *   spin -a incident.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan
 * finds "assertion violated (holds[i]==1)" (isolation).
 */
#define PAGES 2

bool honor_reject = false; /* v0.5.19; true models v0.5.22's retire at admission (#38935) */
bool pend = true;           /* the prompt is over prefill's limit: a pending reject */
byte holds[PAGES];          /* 0: KV of an earlier request (never zeroed); 1: r0's own */
bool owns[PAGES];
byte dphase = 0;            /* 0 queued, 1 transfer, 2 running, 3 done */
bool success = false;

active proctype Decode() {
    byte i;
    do
    :: dphase == 0 && !(honor_reject && pend) ->
        atomic { i = 0; do :: i < PAGES -> owns[i] = true; i++ :: else -> break od; dphase = 1 }
    :: dphase == 0 && honor_reject && pend -> dphase = 3; break
    :: dphase == 1 && success ->
        atomic {
            dphase = 2;
            i = 0;
            do :: i < PAGES -> assert(holds[i] == 1); i++ :: else -> break od
        }
        break
    od
}

active proctype Prefill() {
    (dphase == 1 || dphase == 3);
    if
    :: dphase == 3 -> skip /* retired with its original 400 */
    :: else ->
        /* the placeholder: one token, one page, then Success */
        holds[0] = 1;
        success = true
    fi
}
