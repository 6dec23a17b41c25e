// The C span path: the functions behind hub.h's inline step and lane
// calls (gs_hub_begin_step_call, gs_hub_lane_begin_call, _lane_end_call,
// _next_lane_call, _next_step_call) record lane spans through the CUDA
// core, and count and arm steps, without entering Go: a crossing from a
// thread busy in an engine costs 0.4 to 3 us, more than all that a lane
// boundary adds to the driver's record. They follow go/internal/spanring's
// protocol on the hub's own words, step for step as go/gpuspans does (the
// functions below are recorder.go's of the same name): Go lands, reclaims
// and retires what C begins, and the other way round. What is rare goes to
// Go: a failed record (Go logs it or turns the device dead), a lane out of
// range, a hub with no published set or with a recorder whose pool is not
// the core's (a simulated device), a bad handle, and a step with more to
// do than count and arm (docs/design.md, the C span path).
//
// The whole header first, so that the definitions below are checked
// against its declarations (spanpath.h's include of it is then a no-op).
#include "gpuspans/hub.h"

#include "gpuspans/gpuspans.h"
#include "exports.h"
#include "spanpath.h"

gs_sp_hub gs_sp_hubs[GS_HUB_MAX_HUBS] __attribute__((aligned(64)));

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)

static inline int cas64(uint64_t* p, uint64_t old, uint64_t v) {
  return __atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static inline int cas32(uint32_t* p, uint32_t old, uint32_t v) {
  return __atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static inline uint64_t pack(uint64_t pos, uint64_t state) {
  return (pos + 1) << GS_SP_POS_SHIFT | state;
}

// A call in progress: the hub's handle, its set, and one of its recorders.
typedef struct call {
  gs_hub hub;
  const gs_sp_set* set;
  const gs_sp_rec* r;
  int32_t ri; // r's index in set
} call;

static inline gs_sp_slot* slot_of(const gs_sp_rec* r, uint64_t pos) {
  return &r->slots[pos % r->nslots];
}

static void give_back(const gs_sp_rec* r, uint64_t from) {
  if (from == 0) return;
  gs_sp_slot* l = slot_of(r, from - 1);
  if (cas32(&l->lent, GS_SP_LENT_WAITING, GS_SP_LENT_NONE)) return;
  if (cas32(&l->lent, GS_SP_LENT_LANDED, GS_SP_LENT_NONE)) {
    STORE(&l->word, pack(from - 1, GS_SP_SLOT_FREE));
  }
}

static void slot_free(const gs_sp_rec* r, gs_sp_slot* sl, uint64_t pos) {
  give_back(r, sl->from);
  sl->from = 0;
  if (LOAD(&sl->lent) == GS_SP_LENT_WAITING &&
      cas32(&sl->lent, GS_SP_LENT_WAITING, GS_SP_LENT_LANDED)) {
    STORE(&sl->word, pack(pos, GS_SP_SLOT_LENT));
    return;
  }
  STORE(&sl->word, pack(pos, GS_SP_SLOT_FREE));
}

#define ERRORED (-1)

// release frees the slot before counting, as Go's does: a snapshot reads
// the counts before it scans the slots.
static void release(const call* c, gs_sp_slot* sl, uint64_t pos, int reason) {
  slot_free(c->r, sl, pos);
  if (reason == ERRORED) {
    ADD(c->r->errored, 1);
  } else {
    ADD(&c->r->dropped[reason], 1);
  }
}

static void span_failed(const call* c, gs_sp_slot* sl, uint64_t pos, int32_t op, gs_status st,
                        int32_t cu) {
  if (st == GS_ERR_CAPTURING) {
    release(c, sl, pos, GS_SP_DROP_CAPTURING);
    return;
  }
  gs_sp_span_failed(c->hub, c->set->id, c->ri, pos, op, (int32_t)st, cu);
}

static gs_sp_slot* claim(const call* c, uint64_t key, uint64_t* out) {
  const gs_sp_rec* r = c->r;
  uint64_t pos = __atomic_fetch_add(r->next, 1, __ATOMIC_SEQ_CST);
  if (pos & GS_SP_NEXT_SEALED) return 0;
  gs_sp_slot* sl = slot_of(r, pos);
  uint64_t w = LOAD(&sl->word);
  if ((w & GS_SP_STATE_MASK) != GS_SP_SLOT_FREE || (w >> GS_SP_POS_SHIFT) > pos ||
      !cas64(&sl->word, w, pack(pos, GS_SP_SLOT_OPENING))) {
    ADD(&r->dropped[GS_SP_DROP_SLOT_BUSY], 1);
    return 0;
  }
  sl->kind = GS_SP_KIND_LANE;
  sl->key = key;
  sl->stream = r->stream;
  sl->step = LOAD(c->set->step);
  sl->from = 0;
  if (LOAD(r->status) != GS_SP_STATUS_OPEN) {
    release(c, sl, pos, GS_SP_DROP_RETIRED);
    return 0;
  }
  *out = pos;
  return sl;
}

static int begin(const call* c, uint64_t key, uint64_t* out) {
  uint64_t pos;
  gs_sp_slot* sl = claim(c, key, &pos);
  if (!sl) return 0;
  int32_t cu = 0;
  gs_status st = gs_pool_record_begin((gs_pool*)c->r->pool, (uint32_t)(pos % c->r->nslots),
                                      c->r->stream, &cu);
  if (st != GS_OK) {
    span_failed(c, sl, pos, GS_SP_OP_BEGIN, st, cu);
    return 0;
  }
  STORE(&sl->word, pack(pos, GS_SP_SLOT_OPEN));
  *out = pos;
  return 1;
}

static void end_claimed(const call* c, gs_sp_slot* sl, uint64_t pos) {
  if ((LOAD(c->r->status) & GS_SP_STATUS_MASK) == GS_SP_STATUS_DEAD) {
    release(c, sl, pos, ERRORED);
    return;
  }
  int32_t cu = 0;
  gs_status st = gs_pool_record_end((gs_pool*)c->r->pool, (uint32_t)(pos % c->r->nslots),
                                    sl->stream, &cu);
  if (st != GS_OK) {
    span_failed(c, sl, pos, GS_SP_OP_END, st, cu);
    return;
  }
  STORE(&sl->word, pack(pos, GS_SP_SLOT_CLOSED));
}

static int end(const call* c, uint64_t pos) {
  gs_sp_slot* sl = slot_of(c->r, pos);
  if (!cas64(&sl->word, pack(pos, GS_SP_SLOT_OPEN), pack(pos, GS_SP_SLOT_CLOSING))) return 0;
  end_claimed(c, sl, pos);
  return 1;
}

static int follow(const call* c, uint64_t prev, uint64_t key, uint64_t* out) {
  const gs_sp_rec* r = c->r;
  gs_sp_slot* ps = slot_of(r, prev);
  if (!cas64(&ps->word, pack(prev, GS_SP_SLOT_OPEN), pack(prev, GS_SP_SLOT_CLOSING))) {
    end(c, prev);
    return begin(c, key, out);
  }
  if (LOAD(r->status) != GS_SP_STATUS_OPEN) {
    end_claimed(c, ps, prev);
    return begin(c, key, out); // drops it: the recorder is off
  }
  uint64_t pos;
  gs_sp_slot* sl = claim(c, key, &pos);
  if (!sl) {
    end_claimed(c, ps, prev);
    return 0;
  }
  sl->from = prev + 1;
  STORE(&ps->lent, GS_SP_LENT_WAITING);
  int32_t cu = 0;
  gs_status st = gs_pool_record_next((gs_pool*)r->pool, (uint32_t)(prev % r->nslots),
                                     (uint32_t)(pos % r->nslots), r->stream, &cu);
  if (st != GS_OK) {
    // Nothing was recorded: both spans fail alike.
    sl->from = 0;
    STORE(&ps->lent, GS_SP_LENT_NONE);
    span_failed(c, ps, prev, GS_SP_OP_NEXT, st, cu);
    span_failed(c, sl, pos, GS_SP_OP_NEXT, st, cu);
    return 0;
  }
  STORE(&sl->word, pack(pos, GS_SP_SLOT_OPEN));
  STORE(&ps->word, pack(prev, GS_SP_SLOT_CLOSED));
  *out = pos;
  return 1;
}

static void abandon_lane(const call* c, int32_t lane) {
  uint64_t* tok = &c->r->lane_tok[lane];
  uint64_t t = LOAD(tok);
  if (t == 0 || t == GS_SP_LANE_RESERVING || !cas64(tok, t, 0)) return;
  ADD(c->set->open_lanes, -1);
  uint64_t pos = t - 1;
  gs_sp_slot* sl = slot_of(c->r, pos);
  uint64_t from = sl->from; // read while the span is open: nobody writes it then
  if (cas64(&sl->word, pack(pos, GS_SP_SLOT_OPEN), pack(pos, GS_SP_SLOT_FREE))) {
    give_back(c->r, from);
    ADD(&c->r->dropped[GS_SP_DROP_RETIRED], 1);
  }
}

static void lane_opened(const call* c, int32_t lane, uint64_t pos, int ok, int counted) {
  uint64_t* tok = &c->r->lane_tok[lane];
  if (!ok) {
    STORE(tok, 0);
    if (counted) ADD(c->set->open_lanes, -1);
    return;
  }
  STORE(tok, pos + 1);
  if (!counted) ADD(c->set->open_lanes, 1);
  // retire may have scanned the lanes while this one was reserving.
  if (LOAD(c->r->status) & GS_SP_STATUS_RETIRED) abandon_lane(c, lane);
}

static void lane_begin(const call* c, int32_t lane) {
  if (!cas64(&c->r->lane_tok[lane], 0, GS_SP_LANE_RESERVING)) {
    ADD(c->set->lane_already_open, 1);
    return;
  }
  uint64_t pos = 0;
  int ok = begin(c, (uint64_t)lane, &pos);
  lane_opened(c, lane, pos, ok, 0);
}

static void lane_end(const call* c, int32_t lane) {
  uint64_t* tok = &c->r->lane_tok[lane];
  uint64_t t = LOAD(tok);
  if (t == 0 || t == GS_SP_LANE_RESERVING || !cas64(tok, t, 0)) return;
  ADD(c->set->open_lanes, -1);
  end(c, t - 1);
}

static void lane_next(const call* c, int32_t from, int32_t to, int begin_to) {
  uint64_t* ft = &c->r->lane_tok[from];
  uint64_t t = LOAD(ft);
  if (t == 0 || t == GS_SP_LANE_RESERVING || !cas64(ft, t, 0)) {
    if (begin_to) lane_begin(c, to);
    return;
  }
  if (!begin_to || !cas64(&c->r->lane_tok[to], 0, GS_SP_LANE_RESERVING)) {
    if (begin_to) ADD(c->set->lane_already_open, 1);
    ADD(c->set->open_lanes, -1);
    end(c, t - 1);
    return;
  }
  // from's place in the open-lane count passes to to.
  uint64_t pos = 0;
  int ok = follow(c, t - 1, (uint64_t)to, &pos);
  lane_opened(c, to, pos, ok, 1);
}

// enter returns hub's set with the call counted in its slot's active
// count, or NULL (nothing counted) when the call must go to Go: no set
// (a bad, closed or closing handle, or GPUSPANS_SPAN_PATH=go), or a
// recorder with spans that C cannot record (its pool is not the core's,
// or opened after the set was published).
static const gs_sp_set* enter(gs_hub hub, gs_sp_hub** out) {
  gs_sp_hub* h = &gs_sp_hubs[hub % GS_HUB_MAX_HUBS];
  ADD(&h->active, 1);
  const gs_sp_set* s = 0;
  if (LOAD(&h->handle) == hub && hub != 0) s = (const gs_sp_set*)LOAD(&h->set);
  if (s) {
    for (int32_t i = 0; i < s->nrecs; i++) {
      if (s->recs[i].pool) continue;
      uint32_t st = LOAD(s->recs[i].status) & GS_SP_STATUS_MASK;
      if (st == GS_SP_STATUS_OPEN || st == GS_SP_STATUS_DEAD) {
        s = 0;
        break;
      }
    }
  }
  if (!s) {
    ADD(&h->active, -1);
    return 0;
  }
  *out = h;
  return s;
}

static inline void leave(gs_sp_hub* h) { ADD(&h->active, -1); }

// word is hub's state word; the Go methods test their state where these
// calls test it.
static inline uint32_t word(gs_hub hub) {
  return LOAD(&gs_hub_words[(hub % GS_HUB_MAX_HUBS) * GS_HUB_WORD_STRIDE]);
}


// on returns the call for recorder i of s, or 0 when the path does not act
// on it: it has no pool of the core's, so it is pending or failed (enter
// sent sets with other such recorders to Go) and holds no span.
static inline int on(gs_hub hub, const gs_sp_set* s, int32_t i, call* c) {
  const gs_sp_rec* r = &s->recs[i];
  if (!r->pool) return 0;
  c->hub = hub;
  c->set = s;
  c->r = r;
  c->ri = i;
  return 1;
}

static inline int is_open(const call* c) { return LOAD(c->r->status) == GS_SP_STATUS_OPEN; }

gs_hub_status gs_hub_lane_begin_call(gs_hub hub, int32_t lane) {
  if (gs_capi_fork_seen()) return gs_capi_refuse("gs_hub_lane_begin_call");
  gs_sp_hub* h;
  const gs_sp_set* s = enter(hub, &h);
  if (!s) return gs_hub_lane_begin_go(hub, lane);
  if (!gs_hub_word_lanes_begin(word(hub))) {
    leave(h);
    return GS_HUB_OK;
  }
  if (lane < 0 || lane >= s->nlanes) {
    leave(h);
    return gs_hub_lane_begin_go(hub, lane); // counted there
  }
  call c;
  for (int32_t i = 0; i < s->nrecs; i++) {
    if (on(hub, s, i, &c) && is_open(&c)) lane_begin(&c, lane);
  }
  leave(h);
  return GS_HUB_OK;
}

gs_hub_status gs_hub_lane_end_call(gs_hub hub, int32_t lane) {
  if (gs_capi_fork_seen()) return gs_capi_refuse("gs_hub_lane_end_call");
  gs_sp_hub* h;
  const gs_sp_set* s = enter(hub, &h);
  if (!s) return gs_hub_lane_end_go(hub, lane);
  if (LOAD(s->open_lanes) != 0 && lane >= 0 && lane < s->nlanes) {
    call c;
    for (int32_t i = 0; i < s->nrecs; i++) {
      if (on(hub, s, i, &c)) lane_end(&c, lane);
    }
  }
  leave(h);
  return GS_HUB_OK;
}

gs_hub_status gs_hub_next_lane_call(gs_hub hub, int32_t from, int32_t to) {
  if (gs_capi_fork_seen()) return gs_capi_refuse("gs_hub_next_lane_call");
  gs_sp_hub* h;
  const gs_sp_set* s = enter(hub, &h);
  if (!s) return gs_hub_next_lane_go(hub, from, to);
  uint32_t w = word(hub);
  if (!gs_hub_word_lanes_end(w)) {
    leave(h);
    return GS_HUB_OK;
  }
  int begin_to = to >= 0 && gs_hub_word_lanes_begin(w);
  if (begin_to && to >= s->nlanes) {
    leave(h);
    return gs_hub_next_lane_go(hub, from, to); // counted there
  }
  int ends = from >= 0 && from < s->nlanes && LOAD(s->open_lanes) != 0;
  call c;
  for (int32_t i = 0; i < s->nrecs; i++) {
    if (!on(hub, s, i, &c)) continue;
    if (ends) {
      lane_next(&c, from, to, begin_to && is_open(&c));
    } else if (begin_to && is_open(&c)) {
      lane_begin(&c, to);
    }
  }
  leave(h);
  return GS_HUB_OK;
}

// mirror_value is the hub's mirror word as syncMirror computes it.
static uint32_t mirror_value(const gs_sp_set* s) {
  return LOAD(s->state) | (LOAD(s->pools) != 0 ? GS_HUB_WORD_POOLS : 0);
}

// The step begin, while Go says a step may be taken here (c_step: see
// spanring.Hub.CStep for when): it counts the step and arms one in
// kernel_span_every, as gpuspans' arm does, and stores the state into the
// hub's mirror word until what it stored is still current, as syncMirror
// does. Otherwise it returns 0, having changed nothing, to send the step
// to Go.
static int step(const gs_sp_set* s, gs_hub hub) {
  if (!LOAD(s->c_step)) return 0;
  ADD(s->leak_clock, 1);
  uint32_t level = LOAD(s->state) & GS_HUB_WORD_LEVEL;
  if (level == GS_HUB_LEVEL_OFF) return 1;
  uint64_t n = ADD(s->step, 1);
  if (level != GS_HUB_LEVEL_KERNEL) return 1;
  uint64_t every = (uint64_t)LOAD(s->every); /* >= 1: Go refuses less */
  uint32_t armed = every != 0 && n % every == 0 ? GS_HUB_WORD_ARMED : 0;
  for (;;) {
    uint32_t old = LOAD(s->state);
    if ((old & GS_HUB_WORD_LEVEL) != GS_HUB_LEVEL_KERNEL) return 1; /* SetLevel disarmed it */
    uint32_t next = (old & ~GS_HUB_WORD_ARMED) | armed;
    if (next == old) break;
    if (cas32(s->state, old, next)) {
      uint32_t* mirror = &gs_hub_words[(hub % GS_HUB_MAX_HUBS) * GS_HUB_WORD_STRIDE];
      uint32_t v;
      do {
        v = mirror_value(s);
        STORE(mirror, v);
      } while (mirror_value(s) != v);
      break;
    }
  }
  if (armed) ADD(s->armed_steps, 1);
  return 1;
}

gs_hub_status gs_hub_begin_step_call(gs_hub hub) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_begin_step_call");
  gs_sp_hub* h;
  const gs_sp_set* s = enter(hub, &h);
  if (!s) return gs_hub_begin_step_go(hub);
  int done = step(s, hub);
  leave(h);
  return done ? GS_HUB_OK : gs_hub_begin_step_go(hub);
}

// next_step is a step begin and then a shared boundary, as Hub.NextStep is
// BeginStep and then NextLane; without the C path, one call into Go does
// both.
gs_hub_status gs_hub_next_step_call(gs_hub hub, int32_t last, int32_t first) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_next_step_call");
  gs_sp_hub* h;
  if (!enter(hub, &h)) return gs_hub_next_step_go(hub, last, first);
  leave(h);
  gs_hub_status st = gs_hub_begin_step_call(hub);
  if (st != GS_HUB_OK) return st;
  return gs_hub_next_lane_call(hub, last, first);
}
