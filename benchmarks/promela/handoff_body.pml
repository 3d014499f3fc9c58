/* The handoff of model/handoff/protocol.py in Promela, for SPIN, at 3 requests x 4 pages
 * (push mode, no radix cache, no checksum, no page tags, no prefill lease). Included by
 * incident_3x4.pml and fixed_3x4.pml, which set the switches:
 *   HONOR        honor_pending_reject (#38935: a pending reject retired at admission)
 *   PLACEHOLDER  placeholder_prompt (#30233: the over-limit prompt becomes 1 token)
 *   SOA          success_overwrites_abort (before #36612)
 *   IMMEDIATE    release = "immediate" (#24527) else "deferred_ack" (#38961, after drain)
 *   PREFIX       decode_prefix_cache (hit is a free choice; with remote_trim = "tail" it
 *                changes no step, but it is part of the state, as in kvproof's)
 *
 * Faithful to kvproof's model: the same variables (one byte or bit per cell, enums as
 * numbers in kvproof's value order), one atomic transition (d_step) per kvproof action
 * instance, guards and updates as in protocol.py, the four safety invariants asserted
 * after every transition. Abstracted: nothing beyond what kvproof abstracts; the rigid
 * choices (over_p, over_d, hit) are made before the first step, which adds a few
 * initial states kvproof enumerates directly. No symmetry reduction (SPIN has none).
 */

#define R 3
#define P 4
#define RP(r, p) ((r) * P + (p))

/* DPhase idle queued transfer running draining done */
#define IDLE 0
#define QUEUED 1
#define TRANSFER 2
#define RUNNING 3
#define DRAINING 4
#define DONE 5
/* PPhase idle waiting active sent stopped */
#define PIDLE 0
#define WAITING 1
#define ACTIVE 2
#define SENT 3
#define STOPPED 4
/* Poll none transferring success failed */
#define NONE 0
#define TRANSFERRING 1
#define SUCCESS 2
#define FAILED 3
/* Resp none ok rejected error aborted */
#define OK 1
#define REJECTED 2
#define ABORTED 4

bool over_p[R]; bool over_d[R]; bool hit[R];
byte dphase[R]; byte pphase[R]; byte poll[R]; byte resp[R];
bool pend[R]; bool abort_msg[R]; bool src_ok[R]; bool leaked[R];
bool owns[R * P]; bool dst[R * P]; bool posted[R * P]; bool inflight[R * P];
bool holds[R * P];  /* holds(Page, Req), indexed RP(r, p) */
bool filled[P]; bool stray[P]; bool at_pos[P];

/* placeholder(r): the pending reject is not honoured and the prompt becomes 1 token */
#define PH(r) (!HONOR && PLACEHOLDER && over_p[r])

#define OWNED(p) (owns[RP(0, p)] || owns[RP(1, p)] || owns[RP(2, p)])
#define ANY_OWN(r) (owns[RP(r, 0)] || owns[RP(r, 1)] || owns[RP(r, 2)] || owns[RP(r, 3)])
#define ANY_POSTED(r) (posted[RP(r, 0)] || posted[RP(r, 1)] || posted[RP(r, 2)] || posted[RP(r, 3)])
#define NO_INFLIGHT(r) (!inflight[RP(r, 0)] && !inflight[RP(r, 1)] && !inflight[RP(r, 2)] && !inflight[RP(r, 3)])
#define COVERED(r, q) (!dst[RP(r, q)] || posted[RP(r, q)])
#define EVERY_PAGE(r) (COVERED(r, 0) && COVERED(r, 1) && COVERED(r, 2) && COVERED(r, 3))
/* bad(r): a page in r's table does not hold r's fresh KV at its position */
#define STALE(r, p) (owns[RP(r, p)] && !(holds[RP(r, p)] && filled[p] && at_pos[p]))
#define BAD(r) (STALE(r, 0) || STALE(r, 1) || STALE(r, 2) || STALE(r, 3))
#define FREE(r) owns[RP(r, 0)] = 0; owns[RP(r, 1)] = 0; owns[RP(r, 2)] = 0; owns[RP(r, 3)] = 0

/* the safety invariants: isolation, no_stray_write, reject_final, one_owner */
#define REJ_OK(r) (!(over_p[r] || over_d[r] || pend[r]) || (resp[r] != OK && dphase[r] != RUNNING))
#define ONE(p) (owns[RP(0, p)] + owns[RP(1, p)] + owns[RP(2, p)] <= 1)
#define INV \
    assert(!leaked[0] && !leaked[1] && !leaked[2]); \
    assert(!stray[0] && !stray[1] && !stray[2] && !stray[3]); \
    assert(REJ_OK(0) && REJ_OK(1) && REJ_OK(2)); \
    assert(ONE(0) && ONE(1) && ONE(2) && ONE(3))

/* -- actions (protocol.py, push mode), one transition per instance -------------------- */
#define ARRIVE(r) :: d_step { dphase[r] == IDLE -> \
    if :: over_d[r] || (HONOR && over_p[r]) -> \
          dphase[r] = DONE; pphase[r] = STOPPED; resp[r] = REJECTED; pend[r] = 0; src_ok[r] = 0 \
       :: else -> \
          dphase[r] = QUEUED; pphase[r] = WAITING; resp[r] = NONE; \
          pend[r] = (!HONOR && over_p[r]); src_ok[r] = 1 \
    fi; INV }
#define ALLOC(r, p) :: d_step { dphase[r] == QUEUED && !OWNED(p) -> \
    owns[RP(r, p)] = 1; filled[p] = 0; at_pos[p] = 0; INV }
#define SEND(r) :: d_step { dphase[r] == QUEUED && ANY_OWN(r) -> \
    dphase[r] = TRANSFER; poll[r] = TRANSFERRING; \
    dst[RP(r, 0)] = owns[RP(r, 0)]; dst[RP(r, 1)] = owns[RP(r, 1)]; \
    dst[RP(r, 2)] = owns[RP(r, 2)]; dst[RP(r, 3)] = owns[RP(r, 3)]; \
    if :: pphase[r] == WAITING -> pphase[r] = ACTIVE :: else -> skip fi; INV }
#define POST(r, p) :: d_step { pphase[r] == ACTIVE && dst[RP(r, p)] && !posted[RP(r, p)] \
    && (!PH(r) || !ANY_POSTED(r)) -> posted[RP(r, p)] = 1; inflight[RP(r, p)] = 1; INV }
#define LAND(r, p) :: d_step { inflight[RP(r, p)] -> \
    inflight[RP(r, p)] = 0; \
    holds[RP(0, p)] = 0; holds[RP(1, p)] = 0; holds[RP(2, p)] = 0; holds[RP(r, p)] = src_ok[r]; \
    filled[p] = 1; at_pos[p] = !PH(r); stray[p] = stray[p] || !owns[RP(r, p)]; INV }
#define P_ABORT(r) :: d_step { (pphase[r] == WAITING || pphase[r] == ACTIVE) && !pend[r] -> \
    pend[r] = 1; INV }
#define DONE_(r) :: d_step { pphase[r] == ACTIVE \
    && ((PH(r) && ANY_POSTED(r)) || (!PH(r) && EVERY_PAGE(r))) && NO_INFLIGHT(r) -> \
    pphase[r] = SENT; \
    if :: poll[r] == FAILED || (!SOA && pend[r]) -> poll[r] = FAILED :: else -> poll[r] = SUCCESS fi; \
    INV }
#define FAIL(r) :: d_step { pphase[r] == ACTIVE -> pphase[r] = STOPPED; poll[r] = FAILED; INV }
#define COMMIT(r) :: d_step { dphase[r] == TRANSFER && poll[r] == SUCCESS -> \
    dphase[r] = RUNNING; resp[r] = OK; leaked[r] = leaked[r] || BAD(r); INV }
#define STEP(r) :: d_step { dphase[r] == RUNNING -> leaked[r] = leaked[r] || BAD(r); INV }
#define FINISH(r) :: d_step { dphase[r] == RUNNING -> dphase[r] = DONE; FREE(r); INV }
#define ABORT(r) :: d_step { dphase[r] == QUEUED || dphase[r] == TRANSFER || dphase[r] == RUNNING -> \
    if :: IMMEDIATE || dphase[r] != TRANSFER -> dphase[r] = DONE; FREE(r) \
       :: else -> dphase[r] = DRAINING fi; \
    poll[r] = FAILED; abort_msg[r] = 1; \
    if :: resp[r] == NONE -> resp[r] = ABORTED :: else -> skip fi; INV }
#define ABORT_SEEN(r) :: d_step { abort_msg[r] && (pphase[r] == WAITING || pphase[r] == ACTIVE) -> \
    pphase[r] = STOPPED; INV }
#define ACK(r) :: d_step { dphase[r] == DRAINING && NO_INFLIGHT(r) \
    && pphase[r] != WAITING && pphase[r] != ACTIVE -> dphase[r] = DONE; FREE(r); INV }

#define PER_PAGE(A, r) A(r, 0) A(r, 1) A(r, 2) A(r, 3)
#define PER_REQ(r) ARRIVE(r) PER_PAGE(ALLOC, r) SEND(r) PER_PAGE(POST, r) PER_PAGE(LAND, r) \
    P_ABORT(r) DONE_(r) FAIL(r) COMMIT(r) STEP(r) FINISH(r) ABORT(r) ABORT_SEEN(r) ACK(r)

#define CHOOSE(x) if :: x = 1 :: x = 0 fi

init {
    /* the model's defaults: all false, phases idle; pools are never zeroed, so no page
     * holds KV of a request of the instance */
    CHOOSE(over_p[0]); CHOOSE(over_p[1]); CHOOSE(over_p[2]);
    CHOOSE(over_d[0]); CHOOSE(over_d[1]); CHOOSE(over_d[2]);
    if :: PREFIX -> CHOOSE(hit[0]); CHOOSE(hit[1]); CHOOSE(hit[2]) :: else -> skip fi;
    end: do  /* a state with no enabled step is no error here (kvproof: terminal) */
    PER_REQ(0) PER_REQ(1) PER_REQ(2)
    od
}
