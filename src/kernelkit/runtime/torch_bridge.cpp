// The torch bridge: what the launch shim's lanes read of a tensor (device, contiguity, element count,
// data address) and the new outputs they allocate, through ATen instead of Python method calls. Each
// Python call costs the lane a few tenths of a microsecond and torch.empty_like's argument parsing more;
// here they are field reads and one at::empty_like. Compiled against the installed torch by
// `kernelkit warmup` (runtime/torch_bridge.py); the shim runs without it, through Python calls.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <torch/csrc/autograd/python_variable.h>

#include <exception>
#include <vector>

#include "fastlaunch.h"

namespace {

template <typename F>
auto guarded(F &&f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "torch bridge: unknown C++ exception");
  }
  return decltype(f())();
}

int facts(PyObject *x, kk_facts *f) {
  int ok = guarded([&]() -> int {
    const at::Tensor &t = THPVariable_Unpack(x);
    f->device = t.is_cuda() ? t.get_device() : -1;
    f->contiguous = t.is_contiguous();
    f->numel = t.numel();
    f->data_ptr = 0;
    try {
      f->data_ptr = reinterpret_cast<long long>(t.data_ptr());
    } catch (const std::exception &) {  // a wrapper without storage (functorch): not a lane's input
      f->contiguous = 0;
    }
    return 1;
  });
  return ok ? 0 : -1;
}

PyObject *empty_like(PyObject *x) {
  return guarded([&]() -> PyObject * {
    return THPVariable_Wrap(at::empty_like(THPVariable_Unpack(x), at::MemoryFormat::Contiguous));
  });
}

PyObject *new_empty(PyObject *x, PyObject *shape) {
  std::vector<int64_t> sizes(static_cast<size_t>(PyTuple_GET_SIZE(shape)));
  for (size_t i = 0; i < sizes.size(); ++i) {
    sizes[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    if (sizes[i] == -1 && PyErr_Occurred()) return nullptr;
  }
  return guarded([&]() -> PyObject * {
    return THPVariable_Wrap(at::empty(sizes, THPVariable_Unpack(x).options()));
  });
}

const kk_bridge BRIDGE = {KK_BRIDGE_ABI, facts, empty_like, new_empty};

// For the tests: the same reads and allocation called from Python.
PyObject *py_facts(PyObject *, PyObject *x) {
  if (!THPVariable_Check(x)) {
    PyErr_SetString(PyExc_TypeError, "facts(x): x must be a torch.Tensor");
    return nullptr;
  }
  kk_facts f;
  if (facts(x, &f)) return nullptr;
  return Py_BuildValue("{s:i,s:O,s:L,s:L}", "device", f.device, "contiguous", f.contiguous ? Py_True : Py_False,
                       "numel", f.numel, "data_ptr", f.data_ptr);
}

PyObject *py_empty_like(PyObject *, PyObject *x) {
  if (!THPVariable_Check(x)) {
    PyErr_SetString(PyExc_TypeError, "empty_like(x): x must be a torch.Tensor");
    return nullptr;
  }
  return empty_like(x);
}

PyObject *py_new_empty(PyObject *, PyObject *args) {
  PyObject *x, *shape;
  if (!PyArg_ParseTuple(args, "OO!", &x, &PyTuple_Type, &shape)) return nullptr;
  if (!THPVariable_Check(x)) {
    PyErr_SetString(PyExc_TypeError, "new_empty(x, shape): x must be a torch.Tensor");
    return nullptr;
  }
  return new_empty(x, shape);
}

PyMethodDef METHODS[] = {
    {"facts", py_facts, METH_O, "facts(x) -> {device, contiguous, numel, data_ptr}, as the lanes read them"},
    {"empty_like", py_empty_like, METH_O, "empty_like(x): a new contiguous tensor like x"},
    {"new_empty", py_new_empty, METH_VARARGS, "new_empty(x, shape): a new contiguous tensor of shape, x's dtype/device"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_torch_bridge", "kernelkit's torch bridge", -1, METHODS};

}  // namespace

PyMODINIT_FUNC PyInit__torch_bridge() {
  PyObject *m = PyModule_Create(&MODULE);
  if (!m) return nullptr;
  PyObject *cap = PyCapsule_New(const_cast<kk_bridge *>(&BRIDGE), "kernelkit.torch_bridge", nullptr);
  if (!cap || PyModule_AddObject(m, "BRIDGE", cap)) {
    Py_XDECREF(cap);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
