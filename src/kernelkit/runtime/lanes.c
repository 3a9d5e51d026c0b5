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
PyObject *kk_s_dtype, *kk_s_shape, *kk_s_data_ptr, *kk_s_new_empty;
static PyObject *s_get_device, *s_is_contiguous, *s_numel;

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
long long kk_method_ll(PyObject *obj, PyObject *name) {
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
    kk_s_data_ptr = PyUnicode_InternFromString("data_ptr");
    kk_s_new_empty = PyUnicode_InternFromString("new_empty");
    s_get_device = PyUnicode_InternFromString("get_device");
    s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
    s_numel = PyUnicode_InternFromString("numel");
  }
  Py_RETURN_NONE;
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

/* (x.dtype, x.get_device()) into two new references; 0 on success. */
int kk_dtype_device(PyObject *x, PyObject **dtype, PyObject **dev) {
  *dtype = PyObject_GetAttr(x, kk_s_dtype);
  if (!*dtype) return -1;
  *dev = call_method(x, s_get_device);
  if (!*dev) {
    Py_CLEAR(*dtype);
    return -1;
  }
  return 0;
}

/* The lane under (a.dtype, b.dtype, a's device, b's device), or NULL (error set or not). */
static Lane *find_pair_lane(PyObject *lanes, PyObject *a, PyObject *b) {
  PyObject *ta, *da, *tb, *db;
  if (kk_dtype_device(a, &ta, &da)) return NULL;
  if (kk_dtype_device(b, &tb, &db)) {
    Py_DECREF(ta);
    Py_DECREF(da);
    return NULL;
  }
  Lane *lane = find_lane(lanes, PyTuple_Pack(4, ta, tb, da, db));
  Py_DECREF(ta);
  Py_DECREF(tb);
  Py_DECREF(da);
  Py_DECREF(db);
  return lane;
}

int kk_is_contiguous(PyObject *x) {
  PyObject *r = call_method(x, s_is_contiguous);
  if (!r) return -1;
  int yes = r == Py_True;
  Py_DECREF(r);
  return yes;
}

/* 1 when a and b have one shape and are both contiguous, 0 when not, -1 on error. */
static int same_shape_contiguous(PyObject *a, PyObject *b) {
  PyObject *sa = PyObject_GetAttr(a, kk_s_shape), *sb = sa ? PyObject_GetAttr(b, kk_s_shape) : NULL;
  int ok = sb ? PyObject_RichCompareBool(sa, sb, Py_EQ) : -1;
  Py_XDECREF(sa);
  Py_XDECREF(sb);
  if (ok > 0) ok = kk_is_contiguous(a);
  if (ok > 0) ok = kk_is_contiguous(b);
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
  PyObject *dtype, *dev;
  if (kk_dtype_device(x, &dtype, &dev)) return NULL;
  Lane *lane = find_lane(argv[0], PyTuple_Pack(3, dtype, dev, argv[2]));
  Py_DECREF(dtype);
  Py_DECREF(dev);
  int c = lane ? kk_is_contiguous(x) : 0;
  if (c <= 0) NONE_OR_ERROR();
  PyObject *out = PyObject_Vectorcall(kk_empty_like, &x, 1, NULL);
  if (!out) return NULL;
  long long n = kk_method_ll(x, s_numel);
  long long xp = kk_method_ll(x, kk_s_data_ptr), op = kk_method_ll(out, kk_s_data_ptr);
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
  Lane *lane = find_pair_lane(argv[0], a, b);
  int ok = lane ? same_shape_contiguous(a, b) : 0;
  if (ok <= 0) NONE_OR_ERROR();
  PyObject *out = PyObject_Vectorcall(kk_empty_like, &a, 1, NULL);
  if (!out) return NULL;
  long long n = kk_method_ll(a, s_numel);
  long long ap = kk_method_ll(a, kk_s_data_ptr), bp = kk_method_ll(b, kk_s_data_ptr);
  long long op = kk_method_ll(out, kk_s_data_ptr);
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
  Lane *lane = find_pair_lane(argv[0], x, y);
  int ok = lane ? same_shape_contiguous(x, y) : 0;
  if (ok <= 0) NONE_OR_ERROR();
  long long n = kk_method_ll(x, s_numel);
  long long xp = kk_method_ll(x, kk_s_data_ptr), yp = kk_method_ll(y, kk_s_data_ptr);
  if (PyErr_Occurred()) return NULL;
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
