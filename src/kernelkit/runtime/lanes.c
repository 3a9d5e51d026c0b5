/* Lanes: the plain eager call of an op for one kind of input, in C.
 *
 * A lane is made by an op's Python module once its checked path has accepted a kind of input (dtype,
 * device, parameter) and is held in the op's lane dict as a capsule. unary(lanes, x, param),
 * binary(lanes, a, b) and axpy(lanes, alpha, x, y) look the lane up and run it: they return the new
 * output (axpy: True, y updated in place), or None for an input the lane does not take (not a plain
 * tensor, no lane for its kind, not contiguous, shapes that differ), which the caller then gives to its
 * checked path. What a lane launches is what the checked path launches for the same input (the GPU
 * tests compare bits). */
#include <string.h>

#include "fastlaunch.h"

/* torch's callables and the error hook, bound once by bind() */
PyObject *kk_tensor_type, *kk_empty_like;
static PyObject *g_current_device, *g_raw_stream, *g_exchange_device, *g_fail;
PyObject *kk_s_dtype, *kk_s_shape;
static PyObject *s_data_ptr, *s_new_empty, *s_get_device, *s_is_contiguous, *s_numel;
static const kk_bridge *g_bridge; /* NULL: tensors are read through their Python methods */

/* The element-wise lanes: two kernels and two launch shapes (see make_lane). */
typedef struct {
  void *kernel[2];
  int device;
  long long esize, per;        /* bytes an element, elements a 16-byte vector */
  unsigned block[2], shmem[2];
  long long large_n;           /* unary: elements from which shape 1 applies */
  char name[2][64];
} Lane;

static const char *CAPSULE = "kernelkit.lane";

static PyObject *call_method(PyObject *obj, PyObject *name) {
  PyObject *args[1] = {obj};
  return PyObject_VectorcallMethod(name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* obj.<name>() as a C integer; -1 with a Python error set on failure (callers check PyErr_Occurred). */
static long long method_ll(PyObject *obj, PyObject *name) {
  PyObject *r = call_method(obj, name);
  if (!r) return -1;
  long long v = PyLong_AsLongLong(r);
  Py_DECREF(r);
  return v;
}

PyObject *kk_bind(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *v[6];
  if (!PyArg_ParseTuple(args, "OOOOOO", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5])) return NULL;
  PyObject **slots[6] = {&kk_tensor_type, &kk_empty_like, &g_current_device, &g_raw_stream, &g_exchange_device,
                         &g_fail};
  for (int i = 0; i < 6; ++i) {
    Py_INCREF(v[i]);
    Py_XSETREF(*slots[i], v[i]);
  }
  if (!kk_s_dtype) {
    kk_s_dtype = PyUnicode_InternFromString("dtype");
    kk_s_shape = PyUnicode_InternFromString("shape");
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_new_empty = PyUnicode_InternFromString("new_empty");
    s_get_device = PyUnicode_InternFromString("get_device");
    s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
    s_numel = PyUnicode_InternFromString("numel");
  }
  Py_RETURN_NONE;
}

/* use_bridge(capsule or None): read tensors and allocate outputs through the torch bridge (None: stop). */
PyObject *kk_use_bridge(PyObject *self, PyObject *capsule) {
  (void)self;
  if (capsule == Py_None) {
    g_bridge = NULL;
    Py_RETURN_NONE;
  }
  const kk_bridge *b = PyCapsule_GetPointer(capsule, "kernelkit.torch_bridge");
  if (!b) return NULL;
  if (b->abi != KK_BRIDGE_ABI) {
    PyErr_Format(PyExc_ImportError, "torch bridge ABI %d, the launch shim expects %d", b->abi, KK_BRIDGE_ABI);
    return NULL;
  }
  g_bridge = b; /* the capsule's module stays imported (sys.modules) for the life of the process */
  Py_RETURN_NONE;
}

/* x's device, contiguity, element count and data address; 0, or -1 with an error set. */
int kk_facts_of(PyObject *x, kk_facts *f) {
  if (g_bridge) return g_bridge->facts(x, f);
  long long dev = method_ll(x, s_get_device);
  PyObject *c = dev == -1 && PyErr_Occurred() ? NULL : call_method(x, s_is_contiguous);
  if (!c) return -1;
  f->contiguous = c == Py_True;
  Py_DECREF(c);
  f->device = (int)dev;
  f->numel = method_ll(x, s_numel);
  if (PyErr_Occurred()) return -1;
  f->data_ptr = method_ll(x, s_data_ptr);
  if (PyErr_Occurred()) { /* a wrapper without data (functorch): not a lane's input */
    if (!PyErr_ExceptionMatches(PyExc_RuntimeError)) return -1;
    PyErr_Clear();
    f->data_ptr = 0;
    f->contiguous = 0;
  }
  return 0;
}

/* A new contiguous tensor of x's shape, dtype and device (torch.empty_like). */
PyObject *kk_new_like(PyObject *x) {
  return g_bridge ? g_bridge->empty_like(x) : PyObject_Vectorcall(kk_empty_like, &x, 1, NULL);
}

/* A new contiguous tensor of the given shape (a tuple) with x's dtype and device (x.new_empty(shape)). */
PyObject *kk_new_shaped(PyObject *x, PyObject *shape) {
  if (g_bridge) return g_bridge->new_empty(x, shape);
  PyObject *a[2] = {x, shape};
  return PyObject_VectorcallMethod(s_new_empty, a, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* The data address of a tensor made by kk_new_like / kk_new_shaped; -1 with an error set on failure. */
long long kk_data_ptr_of(PyObject *t) {
  kk_facts f;
  if (g_bridge) return g_bridge->facts(t, &f) ? -1 : f.data_ptr;
  return method_ll(t, s_data_ptr);
}

int kk_bound(void) {
  if (!kk_tensor_type) PyErr_SetString(PyExc_RuntimeError, "lanes used before bind()");
  return kk_tensor_type != NULL;
}

static void free_lane(PyObject *capsule) { PyMem_Free(PyCapsule_GetPointer(capsule, CAPSULE)); }

/* make_lane(kernel0, kernel1, name0, name1, device, esize, block0, shmem0, block1, shmem1, large_n) */
PyObject *kk_make_lane(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *k0, *k1;
  const char *n0, *n1;
  int dev;
  long long esize, large_n;
  unsigned b0, m0, b1, m1;
  if (!PyArg_ParseTuple(args, "OOssiLIIIIL", &k0, &k1, &n0, &n1, &dev, &esize, &b0, &m0, &b1, &m1, &large_n))
    return NULL;
  if (esize < 1 || esize > 16 || 16 % esize || !b0 || !b1) {
    PyErr_SetString(PyExc_ValueError, "make_lane: element size must divide 16 and blocks be positive");
    return NULL;
  }
  Lane *lane = PyMem_Calloc(1, sizeof(Lane));
  if (!lane) return PyErr_NoMemory();
  lane->kernel[0] = PyLong_AsVoidPtr(k0);
  lane->kernel[1] = PyLong_AsVoidPtr(k1);
  if (PyErr_Occurred()) {
    PyMem_Free(lane);
    return NULL;
  }
  snprintf(lane->name[0], sizeof lane->name[0], "%s", n0);
  snprintf(lane->name[1], sizeof lane->name[1], "%s", n1);
  lane->device = dev;
  lane->esize = esize;
  lane->per = 16 / esize;
  lane->block[0] = b0;
  lane->shmem[0] = m0;
  lane->block[1] = b1;
  lane->shmem[1] = m1;
  lane->large_n = large_n;
  PyObject *cap = PyCapsule_New(lane, CAPSULE, free_lane);
  if (!cap) PyMem_Free(lane);
  return cap;
}

/* The lane stored under key (a new reference, consumed) in the dict lanes, or NULL (no error) if none. */
static Lane *find_lane(PyObject *lanes, PyObject *key) {
  if (!key) return NULL;
  PyObject *cap = PyDict_GetItemWithError(lanes, key); /* borrowed */
  Py_DECREF(key);
  if (!cap || !PyCapsule_IsValid(cap, CAPSULE)) return NULL;
  return (Lane *)PyCapsule_GetPointer(cap, CAPSULE);
}

/* The lane under (a.dtype, b.dtype, a's device, b's device), or NULL (error set or not). */
static Lane *find_pair_lane(PyObject *lanes, PyObject *a, const kk_facts *fa, PyObject *b, const kk_facts *fb) {
  PyObject *ta = PyObject_GetAttr(a, kk_s_dtype), *tb = ta ? PyObject_GetAttr(b, kk_s_dtype) : NULL;
  PyObject *da = PyLong_FromLong(fa->device), *db = PyLong_FromLong(fb->device);
  Lane *lane = ta && tb && da && db ? find_lane(lanes, PyTuple_Pack(4, ta, tb, da, db)) : NULL;
  Py_XDECREF(ta);
  Py_XDECREF(tb);
  Py_XDECREF(da);
  Py_XDECREF(db);
  return lane;
}

/* 1 when a and b have one shape, 0 when not, -1 on error. */
static int same_shape(PyObject *a, PyObject *b) {
  PyObject *sa = PyObject_GetAttr(a, kk_s_shape), *sb = sa ? PyObject_GetAttr(b, kk_s_shape) : NULL;
  int ok = sb ? PyObject_RichCompareBool(sa, sb, Py_EQ) : -1;
  Py_XDECREF(sa);
  Py_XDECREF(sb);
  return ok;
}

/* Launch on torch's current stream of `device`, making that device current for the call when it is
 * not; a launch error goes to the Python hook, which raises the library's launch error naming the kernel. */
int kk_launch_on(int device, void *kernel, const char *name, const unsigned grid[3], const unsigned block[3],
                 unsigned shmem, void **params) {
  if (!kk_cu_launch_kernel && kk_bind_driver() != 0) return -1;
  PyObject *dev = PyLong_FromLong(device);
  if (!dev) return -1;
  PyObject *cur = PyObject_Vectorcall(g_current_device, NULL, 0, NULL);
  long current = cur ? PyLong_AsLong(cur) : -1;
  Py_XDECREF(cur);
  PyObject *prev = NULL;
  if (current != device) {
    if (PyErr_Occurred()) PyErr_Clear();
    prev = PyObject_Vectorcall(g_exchange_device, &dev, 1, NULL);
    if (!prev) {
      Py_DECREF(dev);
      return -1;
    }
  }
  PyObject *st = PyObject_Vectorcall(g_raw_stream, &dev, 1, NULL);
  void *stream = st ? PyLong_AsVoidPtr(st) : NULL;
  Py_XDECREF(st);
  int err = -1;
  if (!PyErr_Occurred())
    err = kk_cu_launch_kernel(kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem, stream, params,
                              NULL);
  if (prev) {
    PyObject *back = PyObject_Vectorcall(g_exchange_device, &prev, 1, NULL);
    Py_XDECREF(back);
    Py_DECREF(prev);
  }
  Py_DECREF(dev);
  if (PyErr_Occurred()) return -1;
  if (err) {
    PyObject *r = PyObject_CallFunction(g_fail, "siIIIi", name, err, grid[0], block[0], shmem, device);
    Py_XDECREF(r); /* the hook raises: r is NULL and the error is set */
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "kernel launch failed");
    return -1;
  }
  return 0;
}

/* A 1-D launch of the lane's kernel `which` with its launch shape `shape`. */
static int lane_launch(const Lane *lane, int which, int shape, long long grid, void **params) {
  const unsigned g[3] = {(unsigned)(grid > 0 ? grid : 1), 1, 1}, b[3] = {lane->block[shape], 1, 1};
  return kk_launch_on(lane->device, lane->kernel[which], lane->name[which], g, b, lane->shmem[shape], params);
}

#define NONE_OR_ERROR()                \
  do {                                 \
    if (PyErr_Occurred()) return NULL; \
    Py_RETURN_NONE;                    \
  } while (0)

/* unary(lanes, x, param) -> out or None: out = f(x) by the element-wise fast kernels
 * (out, x, n, head) [x aligned like out, not], launch shape 0 below large_n elements, 1 from it. */
PyObject *kk_unary(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 3) {
    PyErr_SetString(PyExc_TypeError, "unary(lanes, x, param)");
    return NULL;
  }
  PyObject *x = argv[1];
  if (!kk_bound() || (PyObject *)Py_TYPE(x) != kk_tensor_type) NONE_OR_ERROR();
  kk_facts fx;
  if (kk_facts_of(x, &fx)) return NULL;
  if (!fx.contiguous) Py_RETURN_NONE;
  PyObject *dtype = PyObject_GetAttr(x, kk_s_dtype), *dev = PyLong_FromLong(fx.device);
  Lane *lane = dtype && dev ? find_lane(argv[0], PyTuple_Pack(3, dtype, dev, argv[2])) : NULL;
  Py_XDECREF(dtype);
  Py_XDECREF(dev);
  if (!lane) NONE_OR_ERROR();
  PyObject *out = kk_new_like(x);
  if (!out) return NULL;
  const long long n = fx.numel, xp = fx.data_ptr, op = kk_data_ptr_of(out);
  if (PyErr_Occurred()) goto fail;
  if (n == 0) return out;
  long long head = ((-op) & 15) / lane->esize;
  if (head > n) head = n;
  const int large = n >= lane->large_n;
  long long a[4] = {op, xp, n, head};
  void *params[4] = {&a[0], &a[1], &a[2], &a[3]};
  /* the grid covers the tensor, one vector a thread; the epilogue's threads fit in it */
  if (lane_launch(lane, ((xp - op) & 15) != 0, large, (n - head) / (lane->per * lane->block[large]) + 1, params))
    goto fail;
  return out;
fail:
  Py_DECREF(out);
  return NULL;
}

/* binary(lanes, a, b) -> out or None: out = a + b by add's fast kernels for a and b of one shape:
 * add_aligned(out, a, b, n, head) with shape 0 when a and b are misaligned like out, else
 * add_shuffle(out, a, b, n, head, a's misalignment, b's) with shape 1 (bytes past out's head). */
PyObject *kk_binary(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 3) {
    PyErr_SetString(PyExc_TypeError, "binary(lanes, a, b)");
    return NULL;
  }
  PyObject *a = argv[1], *b = argv[2];
  if (!kk_bound() || (PyObject *)Py_TYPE(a) != kk_tensor_type || (PyObject *)Py_TYPE(b) != kk_tensor_type)
    NONE_OR_ERROR();
  kk_facts fa, fb;
  if (kk_facts_of(a, &fa) || kk_facts_of(b, &fb)) return NULL;
  if (!fa.contiguous || !fb.contiguous) Py_RETURN_NONE;
  Lane *lane = find_pair_lane(argv[0], a, &fa, b, &fb);
  int ok = lane ? same_shape(a, b) : 0;
  if (ok <= 0) NONE_OR_ERROR();
  PyObject *out = kk_new_like(a);
  if (!out) return NULL;
  const long long n = fa.numel, ap = fa.data_ptr, bp = fb.data_ptr, op = kk_data_ptr_of(out);
  if (PyErr_Occurred()) goto fail;
  if (n == 0) return out;
  long long head = ((-op) & 15) / lane->esize;
  if (head > n) head = n;
  const long long nvec = (n - head) / lane->per;
  const int shuffle = ((ap - op) & 15) != 0 || ((bp - op) & 15) != 0;
  struct {
    long long op, ap, bp, n;
    int head, da, db;
  } v = {op, ap, bp, n, (int)head, (int)((ap + head * lane->esize) & 15), (int)((bp + head * lane->esize) & 15)};
  void *params[7] = {&v.op, &v.ap, &v.bp, &v.n, &v.head, &v.da, &v.db};
  if (lane_launch(lane, shuffle, shuffle, (nvec + lane->block[shuffle] - 1) / lane->block[shuffle], params)) goto fail;
  return out;
fail:
  Py_DECREF(out);
  return NULL;
}

/* axpy(lanes, alpha, x, y) -> True or None: y = alpha x + y in place by saxpy's vector kernels
 * (y, x, n, alpha as float, head) [x aligned like y, not], launch shape 0; alpha a Python float or int,
 * x and y contiguous, of one shape, not partly overlapping (None for anything else). */
PyObject *kk_axpy(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 4) {
    PyErr_SetString(PyExc_TypeError, "axpy(lanes, alpha, x, y)");
    return NULL;
  }
  PyObject *alpha = argv[1], *x = argv[2], *y = argv[3];
  if (!kk_bound() || (PyObject *)Py_TYPE(x) != kk_tensor_type || (PyObject *)Py_TYPE(y) != kk_tensor_type ||
      !(PyFloat_CheckExact(alpha) || PyLong_CheckExact(alpha)))
    NONE_OR_ERROR();
  double a = PyFloat_AsDouble(alpha); /* an int past a double raises here, as float(alpha) does */
  if (a == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  kk_facts fx, fy;
  if (kk_facts_of(x, &fx) || kk_facts_of(y, &fy)) return NULL;
  if (!fx.contiguous || !fy.contiguous) Py_RETURN_NONE;
  Lane *lane = find_pair_lane(argv[0], x, &fx, y, &fy);
  int ok = lane ? same_shape(x, y) : 0;
  if (ok <= 0) NONE_OR_ERROR();
  const long long n = fx.numel, xp = fx.data_ptr, yp = fy.data_ptr;
  if (n == 0) Py_RETURN_TRUE;
  const long long nb = n * lane->esize;
  if (xp != yp && xp < yp + nb && yp < xp + nb) Py_RETURN_NONE; /* partial overlap: the checked path raises */
  long long head = ((-yp) & 15) / lane->esize;
  if (head > n) head = n;
  struct {
    long long yp, xp, n;
    float a;
    int head;
  } v = {yp, xp, n, (float)a, (int)head};
  void *params[5] = {&v.yp, &v.xp, &v.n, &v.a, &v.head};
  if (lane_launch(lane, ((xp - yp) & 15) != 0, 0, ((n - head) / lane->per + lane->block[0] - 1) / lane->block[0],
                  params))
    return NULL;
  Py_RETURN_TRUE;
}
