/* gpuspans._hot: the span calls an engine makes every step (step, lanes,
 * kernel spans, the armed test), compiled, on the stable ABI (one abi3
 * build for every CPython from 3.8). Each reads the hub's state word and
 * returns, or calls the C ABI's function directly: no ctypes argument
 * conversion and no GIL release, since these calls never block. step is the
 * exception: it releases the GIL, as a kernel window's open or close takes
 * milliseconds.
 *
 * The extension links nothing: gpuspans/_lib.py loads libgpuspans.so with
 * ctypes and hands bind() the functions' addresses and the word's, so both
 * paths call the one library. Anything but a plain int argument (a lane's
 * name, a Lane, a bad value) and an armed step's kernel spans go to the
 * Python callables given to bind, which resolve, call or raise as the
 * ctypes path does. */
#define Py_LIMITED_API 0x03080000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"

typedef gs_hub_status (*step_fn)(gs_hub);
typedef gs_hub_status (*lane_fn)(gs_hub, int32_t);
typedef gs_hub_status (*pair_fn)(gs_hub, int32_t, int32_t);
typedef gs_hub_status (*kend_fn)(gs_hub, uint64_t);

static const uint32_t closed_word = 0;

typedef struct {
  PyObject_HEAD
  const uint32_t* word;
  gs_hub hub;
  step_fn step;
  lane_fn lane_begin, lane_end;
  pair_fn next_lane, next_step;
  kend_fn kernel_end_fn;
  PyObject* lanes;         /* the hub's lane names -> their indices */
  PyObject* lane_type;     /* gpuspans.Lane */
  PyObject* lane_index;    /* lane -> int index (raises for a bad one) */
  PyObject* kernel_begin;  /* the ctypes kernel_begin, for an armed step */
  PyObject* kernel;        /* the ctypes kernel(), for an armed step */
  PyObject* kernel_end;    /* the ctypes kernel_end, for what is not a token */
  PyObject* check;         /* status -> None, or raises the hub's Error */
  PyObject* no_span;       /* kernel()'s context manager on a step not armed */
} Hot;

static inline uint32_t word(const Hot* h) { return __atomic_load_n(h->word, __ATOMIC_ACQUIRE); }


static PyObject* index_name; /* "index", interned */

/* lane converts a lane argument into *out: an int in int32 range, a Lane
 * whose index is one, or one of the hub's lane names directly, anything
 * else through lane_index, the ctypes path's own rule, so that both raise
 * alike. -1 with an exception set on failure. */
static int lane(Hot* h, PyObject* arg, int32_t* out) {
  PyObject* found = NULL;
  if ((PyObject*)Py_TYPE(arg) == h->lane_type) {
    found = PyObject_GetAttr(arg, index_name);
    if (!found) return -1;
  } else if (PyUnicode_CheckExact(arg)) {
    found = PyDict_GetItem(h->lanes, arg); /* borrowed; NULL: not a lane name */
    Py_XINCREF(found);
  }
  if (found) {
    long long v = 0;
    int ok = 0;
    if (PyLong_CheckExact(found)) {
      int overflow = 0;
      v = PyLong_AsLongLongAndOverflow(found, &overflow);
      ok = !overflow && !(v == -1 && PyErr_Occurred()) && v >= INT32_MIN && v <= INT32_MAX;
    }
    Py_DECREF(found);
    if (ok) {
      *out = (int32_t)v;
      return 0;
    }
    PyErr_Clear();
  }
  if (PyLong_CheckExact(arg)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(arg, &overflow);
    if (!overflow && v >= INT32_MIN && v <= INT32_MAX) {
      *out = (int32_t)v;
      return 0;
    }
    PyErr_Clear();
  }
  PyObject* r = PyObject_CallFunctionObjArgs(h->lane_index, arg, NULL);
  if (!r) return -1;
  long long v = PyLong_AsLongLong(r);
  Py_DECREF(r);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < INT32_MIN || v > INT32_MAX) {
    PyErr_Format(PyExc_ValueError, "gpuspans: lane index %lld is not an int32", v);
    return -1;
  }
  *out = (int32_t)v;
  return 0;
}

static PyObject* hot_step(Hot* h, PyObject* unused) {
  (void)unused;
  if (gs_hub_word_step_has_work(word(h))) {
    gs_hub hub = h->hub;
    step_fn fn = h->step;
    Py_BEGIN_ALLOW_THREADS fn(hub);
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}

static PyObject* hot_lane_begin(Hot* h, PyObject* arg) {
  if (gs_hub_word_lanes_begin(word(h))) {
    int32_t l;
    if (lane(h, arg, &l)) return NULL;
    h->lane_begin(h->hub, l);
  }
  Py_RETURN_NONE;
}

static PyObject* hot_lane_end(Hot* h, PyObject* arg) {
  uint32_t w = word(h);
  if (gs_hub_word_lanes_end(w)) {
    int32_t l;
    if (lane(h, arg, &l)) return NULL;
    h->lane_end(h->hub, l);
  }
  Py_RETURN_NONE;
}

/* pair parses two lane arguments; None names no lane (-1). */
static int pair(Hot* h, PyObject* args, const char* name, int32_t* a, int32_t* b) {
  if (PyTuple_Size(args) != 2) {
    PyErr_Format(PyExc_TypeError, "%s() takes 2 lanes (%zd given)", name, PyTuple_Size(args));
    return -1;
  }
  PyObject* x = PyTuple_GetItem(args, 0);
  PyObject* y = PyTuple_GetItem(args, 1);
  *a = *b = -1;
  if (x != Py_None && lane(h, x, a)) return -1;
  if (y != Py_None && lane(h, y, b)) return -1;
  return 0;
}

static PyObject* hot_next_lane(Hot* h, PyObject* args) {
  uint32_t w = word(h);
  if (gs_hub_word_lanes_end(w)) {
    int32_t a, b;
    if (pair(h, args, "next_lane", &a, &b)) return NULL;
    h->next_lane(h->hub, a, b);
  }
  Py_RETURN_NONE;
}

static PyObject* hot_next_step(Hot* h, PyObject* args) {
  if (gs_hub_word_step_has_work(word(h))) {
    int32_t a, b;
    if (pair(h, args, "next_step", &a, &b)) return NULL;
    gs_hub hub = h->hub;
    pair_fn fn = h->next_step;
    Py_BEGIN_ALLOW_THREADS fn(hub, a, b);
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}

static PyObject* hot_armed(Hot* h, PyObject* unused) {
  (void)unused;
  return PyBool_FromLong(gs_hub_word_armed(word(h)));
}

static PyObject* zero;

/* kernel_begin(kernel, stream=None, device=-1): 0 on a step not armed, with
 * no call and no argument parsed; the armed path is Python's. */
static PyObject* hot_kernel_begin(Hot* h, PyObject* args, PyObject* kwargs) {
  if (!gs_hub_word_armed(word(h))) {
    Py_INCREF(zero);
    return zero;
  }
  return PyObject_Call(h->kernel_begin, args, kwargs);
}

/* kernel(kernel, stream=None, device=-1): the shared no-op context manager
 * on a step not armed; the armed path is Python's. */
static PyObject* hot_kernel(Hot* h, PyObject* args, PyObject* kwargs) {
  if (!gs_hub_word_armed(word(h))) {
    Py_INCREF(h->no_span);
    return h->no_span;
  }
  return PyObject_Call(h->kernel, args, kwargs);
}

static PyObject* hot_kernel_end(Hot* h, PyObject* arg) {
  if (PyLong_CheckExact(arg)) {
    unsigned long long tok = PyLong_AsUnsignedLongLong(arg);
    if (!(tok == (unsigned long long)-1 && PyErr_Occurred())) {
      if (tok == 0) Py_RETURN_NONE;
      gs_hub_status st = h->kernel_end_fn(h->hub, tok);
      if (st == GS_HUB_OK) Py_RETURN_NONE;
      return PyObject_CallFunction(h->check, "i", (int)st);
    }
    PyErr_Clear();
  }
  /* Not a token: the ctypes path names what is wrong. */
  return PyObject_CallFunctionObjArgs(h->kernel_end, arg, NULL);
}

/* close makes every later call a no-op: the hub's word slot may serve
 * another hub once this one is closed. */
static PyObject* hot_close(Hot* h, PyObject* unused) {
  (void)unused;
  h->word = &closed_word;
  Py_RETURN_NONE;
}

static int hot_traverse(Hot* h, visitproc visit, void* arg) {
  Py_VISIT(h->lanes);
  Py_VISIT(h->lane_type);
  Py_VISIT(h->lane_index);
  Py_VISIT(h->kernel_begin);
  Py_VISIT(h->kernel);
  Py_VISIT(h->kernel_end);
  Py_VISIT(h->check);
  Py_VISIT(h->no_span);
  return 0;
}

static int hot_clear(Hot* h) {
  Py_CLEAR(h->lanes);
  Py_CLEAR(h->lane_type);
  Py_CLEAR(h->lane_index);
  Py_CLEAR(h->kernel_begin);
  Py_CLEAR(h->kernel);
  Py_CLEAR(h->kernel_end);
  Py_CLEAR(h->check);
  Py_CLEAR(h->no_span);
  return 0;
}

static void hot_dealloc(Hot* h) {
  PyTypeObject* tp = Py_TYPE((PyObject*)h);
  PyObject_GC_UnTrack(h);
  hot_clear(h);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(h);
  Py_DECREF(tp);
}

static PyMethodDef hot_methods[] = {
    {"step", (PyCFunction)hot_step, METH_NOARGS, "Hub.step, compiled."},
    {"lane_begin", (PyCFunction)hot_lane_begin, METH_O, "Hub.lane_begin, compiled."},
    {"lane_end", (PyCFunction)hot_lane_end, METH_O, "Hub.lane_end, compiled."},
    {"next_lane", (PyCFunction)hot_next_lane, METH_VARARGS, "Hub.next_lane, compiled."},
    {"next_step", (PyCFunction)hot_next_step, METH_VARARGS, "Hub.next_step, compiled."},
    {"armed", (PyCFunction)hot_armed, METH_NOARGS, "Whether this step is armed for kernel spans."},
    {"kernel_begin", (PyCFunction)(void (*)(void))hot_kernel_begin, METH_VARARGS | METH_KEYWORDS,
     "Hub.kernel_begin: 0 on a step not armed, compiled."},
    {"kernel", (PyCFunction)(void (*)(void))hot_kernel, METH_VARARGS | METH_KEYWORDS,
     "Hub.kernel: the no-op context manager on a step not armed, compiled."},
    {"kernel_end", (PyCFunction)hot_kernel_end, METH_O, "Hub.kernel_end, compiled."},
    {"close", (PyCFunction)hot_close, METH_NOARGS, "Makes every later call do nothing."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot hot_slots[] = {
    {Py_tp_doc, (void*)"The compiled span calls of one hub; made by gpuspans._hot.bind."},
    {Py_tp_methods, hot_methods},
    {Py_tp_traverse, (void*)hot_traverse},
    {Py_tp_clear, (void*)hot_clear},
    {Py_tp_dealloc, (void*)hot_dealloc},
    {0, NULL},
};

static PyType_Spec hot_spec = {
    "gpuspans._hot.Hot", sizeof(Hot), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, hot_slots,
};

static PyObject* hot_type;

/* bind(word=, hub=, step=, lane_begin=, lane_end=, next_lane=, next_step=,
 *      kernel_end=, lane_index=, kernel_begin_py=, kernel_py=,
 *      kernel_end_py=, check=, no_span=) -> Hot. word and the seven after
 * it are ints: the state word's address, the hub's handle and the
 * addresses of the C ABI's *_call functions; the rest are Python objects. */
static PyObject* bind(PyObject* self, PyObject* args, PyObject* kwargs) {
  (void)self;
  static char* kw[] = {"word", "hub", "step", "lane_begin", "lane_end", "next_lane", "next_step", "kernel_end",
                       "lane_index", "kernel_begin_py", "kernel_py", "kernel_end_py", "check", "no_span",
                       "lanes", "lane_type", NULL};
  PyObject* a[8];
  PyObject *lane_index, *kernel_begin, *kernel, *kernel_end, *check, *no_span, *lanes, *lane_type;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOOOOOOOOOO!O!:bind", kw, &a[0], &a[1], &a[2], &a[3], &a[4],
                                   &a[5], &a[6], &a[7], &lane_index, &kernel_begin, &kernel, &kernel_end, &check,
                                   &no_span, &PyDict_Type, &lanes, &PyType_Type, &lane_type)) {
    return NULL;
  }
  void* p[8];
  for (int i = 0; i < 8; i++) {
    if (i == 1) continue;
    p[i] = PyLong_AsVoidPtr(a[i]);
    if (PyErr_Occurred()) return NULL;
    if (!p[i]) {
      PyErr_Format(PyExc_ValueError, "gpuspans._hot.bind: %s is a NULL address", kw[i]);
      return NULL;
    }
  }
  unsigned long long handle = PyLong_AsUnsignedLongLong(a[1]);
  if (PyErr_Occurred()) return NULL;
  PyObject* calls[] = {lane_index, kernel_begin, kernel, kernel_end, check};
  for (int i = 0; i < 5; i++) {
    if (!PyCallable_Check(calls[i])) {
      PyErr_Format(PyExc_TypeError, "gpuspans._hot.bind: %s must be callable", kw[8 + i]);
      return NULL;
    }
  }
  allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject*)hot_type, Py_tp_alloc);
  Hot* h = (Hot*)alloc((PyTypeObject*)hot_type, 0);
  if (!h) return NULL;
  h->word = (const uint32_t*)p[0];
  h->hub = handle;
  h->step = (step_fn)p[2];
  h->lane_begin = (lane_fn)p[3];
  h->lane_end = (lane_fn)p[4];
  h->next_lane = (pair_fn)p[5];
  h->next_step = (pair_fn)p[6];
  h->kernel_end_fn = (kend_fn)p[7];
  Py_INCREF(lane_index);
  h->lane_index = lane_index;
  Py_INCREF(kernel_begin);
  h->kernel_begin = kernel_begin;
  Py_INCREF(kernel);
  h->kernel = kernel;
  Py_INCREF(kernel_end);
  h->kernel_end = kernel_end;
  Py_INCREF(check);
  h->check = check;
  Py_INCREF(no_span);
  h->no_span = no_span;
  Py_INCREF(lanes);
  h->lanes = lanes;
  Py_INCREF(lane_type);
  h->lane_type = lane_type;
  return (PyObject*)h;
}

/* guarded(enter, exit, fn, args, kwargs) calls fn(*args, **kwargs) inside
 * the launch guard: enter and exit are gs_launch_guard_enter's and _exit's
 * addresses. No Python code runs between the enter and the call, nor
 * between the call's return and the exit, so no exception or signal (a
 * KeyboardInterrupt is raised only by the interpreter's loop) can leave the
 * guard held, which a Python try/finally cannot promise. The enter
 * releases the GIL: it waits while a window attaches or detaches. */
typedef void (*guard_fn)(void);

static PyObject* guarded(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *enter_a, *exit_a, *fn, *fargs, *fkw;
  if (!PyArg_ParseTuple(args, "OOOOO:guarded", &enter_a, &exit_a, &fn, &fargs, &fkw)) return NULL;
  guard_fn enter = (guard_fn)PyLong_AsVoidPtr(enter_a);
  if (PyErr_Occurred()) return NULL;
  guard_fn leave = (guard_fn)PyLong_AsVoidPtr(exit_a);
  if (PyErr_Occurred()) return NULL;
  if (!enter || !leave) {
    PyErr_SetString(PyExc_ValueError, "gpuspans._hot.guarded: a NULL address");
    return NULL;
  }
  if (!PyTuple_Check(fargs) || (fkw != Py_None && !PyDict_Check(fkw))) {
    PyErr_SetString(PyExc_TypeError, "gpuspans._hot.guarded: args must be a tuple and kwargs a dict or None");
    return NULL;
  }
  Py_BEGIN_ALLOW_THREADS enter();
  Py_END_ALLOW_THREADS PyObject* r = PyObject_Call(fn, fargs, fkw == Py_None ? NULL : fkw);
  leave();
  return r;
}

static PyMethodDef module_methods[] = {
    {"bind", (PyCFunction)(void (*)(void))bind, METH_VARARGS | METH_KEYWORDS, "Binds a hub's compiled span calls (see the module's source)."},
    {"guarded", (PyCFunction)guarded, METH_VARARGS, "Calls a function inside the launch guard (see the module's source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gpuspans._hot", "The compiled span calls of gpuspans.Hub.", -1, module_methods, NULL,
    NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__hot(void) {
  PyObject* m = PyModule_Create(&module);
  if (!m) return NULL;
  hot_type = PyType_FromSpec(&hot_spec);
  zero = PyLong_FromLong(0);
  index_name = PyUnicode_InternFromString("index");
  if (!hot_type || !zero || !index_name) {
    Py_DECREF(m);
    return NULL;
  }
  Py_INCREF(hot_type);
  if (PyModule_AddObject(m, "Hot", hot_type) < 0) {
    Py_DECREF(hot_type);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
