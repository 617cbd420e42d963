"""Python helpers of test-dlpack.R: what R cannot write through reticulate (item assignment,
slices, weak references) and a hand-made DLPack producer whose byte_offset is not 0."""

import ctypes
import gc
import weakref


def collect():
    gc.collect()


def setitem(a, index, value):
    a[index] = value


def getitem(a, index):
    return a[index]


def step_columns(a, start, step):
    """a[:, start::step] (a view in NumPy and PyTorch)."""
    return a[:, start::step]


def transpose(a):
    return a.T


def weak(obj):
    return weakref.ref(obj)


def alive(ref):
    return ref() is not None


def data_pointer(a):
    """The address of a's first element (NumPy array or PyTorch tensor)."""
    return str(a.data_ptr()) if hasattr(a, "data_ptr") else str(a.ctypes.data)


def call_dlpack(obj, **kwargs):
    return obj.__dlpack__(**kwargs)


def raises(function, *args, **kwargs):
    """The exception's type and message, or None when function(*args, **kwargs) returns."""
    try:
        function(*args, **kwargs)
    except BaseException as e:  # noqa: B036 -- the test wants whatever is raised
        return [type(e).__name__, str(e)]
    return None


# ---- a producer with byte_offset > 0 (PyTorch and NumPy always export byte_offset 0) ---------


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_NAME = b"dltensor"
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
_loans = {}  # managed tensor address -> what it keeps alive
deleted = [0]  # how many times the producer's deleter ran


@_DELETER
def _delete(address):
    _loans.pop(address, None)
    deleted[0] += 1


def offset_capsule(values, offset):
    """An unversioned capsule over float64 `values` stored `offset` elements into a buffer, with
    data at the buffer's start and byte_offset = 8 * offset; the padding holds -1."""
    n = len(values)
    buffer = (ctypes.c_double * (offset + n))(*([-1.0] * offset + list(values)))
    shape = (ctypes.c_int64 * 1)(n)
    managed = _DLManagedTensor()
    managed.dl_tensor.data = ctypes.addressof(buffer)
    managed.dl_tensor.device = _DLDevice(1, 0)
    managed.dl_tensor.ndim = 1
    managed.dl_tensor.dtype = _DLDataType(2, 64, 1)
    managed.dl_tensor.shape = shape
    managed.dl_tensor.byte_offset = 8 * offset
    managed.deleter = ctypes.cast(_delete, ctypes.c_void_p).value
    address = ctypes.addressof(managed)
    _loans[address] = (buffer, shape, managed)
    return _new_capsule(address, _NAME, None)


def buffer_values(capsule_index=None):
    """The values of every live loan's buffer (after the padding), as lists."""
    return [list(buffer) for buffer, _, _ in _loans.values()]


def deleted_count():
    return deleted[0]
