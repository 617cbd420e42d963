"""The Python half of rcuda's DLPack exchange (docs/dlpack.md).

The R package loads this module through reticulate the first time as_dlpack() or from_dlpack()
runs. rcuda is built without Python, so capsules are made and read with ctypes.pythonapi, and
rcuda's C functions are reached through the addresses that init() receives (Note [Addresses
between R, C and Python] in r/src/dlpack.cpp). Addresses arrive and leave as decimal strings.
"""

import ctypes

# Capsule names of the DLPack Python specification. PyCapsule_New and PyCapsule_SetName keep
# the pointer, not a copy: these module-level bytes live as long as the module.
VERSIONED = b"dltensor_versioned"
UNVERSIONED = b"dltensor"
USED_VERSIONED = b"used_dltensor_versioned"
USED_UNVERSIONED = b"used_dltensor"

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# PYFUNCTYPE: called with the GIL held, and a Python error set by the call is raised.
_api = ctypes.pythonapi
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", _api))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object,
                                      ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object,
                                         ctypes.c_char_p)(("PyCapsule_GetPointer", _api))
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object,
                                      ctypes.c_char_p)(("PyCapsule_SetName", _api))
_capsule_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p,
                                      ctypes.py_object)(("PyCapsule_GetName", _api))


def _capsule_type():
    import datetime  # its C API is a capsule in every CPython (types.CapsuleType is 3.13's)
    return type(datetime.datetime_CAPI)


# rcuda's C functions (init), called with the GIL held (PYFUNCTYPE): they never call Python,
# but a CUDA allocation that fails runs the R package's out-of-memory hook, R's collector, whose
# finalizers may release Python objects.
_export = None
_share = None
_free = None
_capsule_destructor = None


def _address(text):
    value = int(text)
    if value <= 0:
        raise ValueError("rcuda: %r is not an address" % (text,))
    return value


def init(entry_points):
    """Receives the addresses of rcuda's C functions and hands the capsule destructor the
    Python C API it calls (Note [Capsule destructor] in r/src/dlpack.cpp)."""
    global _export, _share, _free, _capsule_destructor
    _export = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                                ctypes.c_char_p, ctypes.c_size_t)(_address(entry_points["export"]))
    _share = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(_address(entry_points["share"]))
    _free = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(_address(entry_points["free"]))
    _capsule_destructor = _address(entry_points["capsule_destructor"])
    set_python_api = ctypes.PYFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_void_p)(_address(entry_points["set_python_api"]))

    def address_of(function):
        return ctypes.cast(function, ctypes.c_void_p).value

    set_python_api(address_of(_api.PyCapsule_IsValid), address_of(_api.PyCapsule_GetPointer),
                   address_of(_api.PyErr_Fetch), address_of(_api.PyErr_Restore))


class RcudaTensor:
    """An rcuda tensor for Python's DLPack consumers: torch.from_dlpack, numpy.from_dlpack,
    cupy.from_dlpack, jax.dlpack.from_dlpack. Each __dlpack__() call lends the same memory
    again; the memory lives until rcuda and every consumer are done with it."""

    def __init__(self, source, device_type, device_id, description):
        handle = _share(_address(source))
        if not handle:
            raise MemoryError("rcuda: no memory for a tensor handle")
        self._source = handle
        self._device = (int(device_type), int(device_id))
        self._description = str(description)

    def __del__(self):
        source, self._source = getattr(self, "_source", None), None
        if source and _free is not None:
            _free(source)

    def __repr__(self):
        return "<rcuda tensor %s, DLPack>" % self._description

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if dl_device is not None and tuple(int(v) for v in dl_device) != self._device:
            raise BufferError("__dlpack__: the tensor is on DLPack device %r and cannot be lent "
                              "on device %r; move it in R first (x$to(device = ...))"
                              % (self._device, tuple(dl_device)))
        if stream is not None and not isinstance(stream, int):
            raise TypeError("__dlpack__: stream must be None or an int, got %r" % (stream,))
        versioned = max_version is not None and int(max_version[0]) >= 1
        managed = ctypes.c_void_p()
        error = ctypes.create_string_buffer(2048)
        status = _export(self._source, int(versioned), int(copy is True), int(stream is not None),
                         0 if stream is None else stream, ctypes.byref(managed), error,
                         ctypes.sizeof(error))
        if status != 0:  # 1: a bad argument (the stream); 2: the export failed
            raise (ValueError if status == 1 else BufferError)(error.value.decode("utf-8",
                                                                                  "replace"))
        try:
            return _capsule_new(managed.value, VERSIONED if versioned else UNVERSIONED,
                                _capsule_destructor)
        except BaseException:
            _delete_managed(managed.value, versioned)
            raise


def _delete_managed(address, versioned):
    struct = DLManagedTensorVersioned if versioned else DLManagedTensor
    deleter = struct.from_address(address).deleter
    if deleter:
        ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(deleter)(address)


# ---- from_dlpack --------------------------------------------------------------------------


def describe(obj):
    """What obj is, for from_dlpack's messages."""
    kind = type(obj)
    return "a Python %s.%s" % (kind.__module__, kind.__qualname__)


def is_capsule(obj):
    return type(obj) is _capsule_type()


def has_dlpack(obj):
    return hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")


def dlpack_device(obj):
    device = obj.__dlpack_device__()
    return [int(device[0]), int(device[1])]


def request_capsule(obj, stream):
    """obj.__dlpack__() as a consumer calls it: rcuda's stream (a decimal string, or None for
    the CPU) and the highest DLPack version rcuda reads; producers that predate DLPack 1.0
    are asked again without max_version, as PyTorch does."""
    kwargs = {"stream": None if stream is None else int(stream)}
    try:
        return obj.__dlpack__(max_version=(1, 1), **kwargs)
    except TypeError:
        return obj.__dlpack__(**kwargs)


def capsule_state(capsule):
    """(name, address) of a capsule: name is "dltensor_versioned", "dltensor", "used" (already
    consumed) or "other"; address a decimal string, or None."""
    for name in (VERSIONED, UNVERSIONED):
        if _capsule_is_valid(capsule, name):
            return [name.decode(), str(_capsule_get_pointer(capsule, name))]
    for name in (USED_VERSIONED, USED_UNVERSIONED):
        if _capsule_is_valid(capsule, name):
            return ["used", None]
    return ["other", None]


def capsule_name(capsule):
    """The capsule's current name (tests)."""
    name = _capsule_get_name(capsule)
    return "" if name is None else name.decode()


def mark_consumed(capsule, versioned):
    """Renames a capsule whose tensor rcuda now owns, so that its destructor leaves it alone."""
    _capsule_set_name(capsule, USED_VERSIONED if versioned else USED_UNVERSIONED)


def capsule_flags(capsule):
    """The flags of a versioned capsule (tests: the read-only and copied bits)."""
    address = _capsule_get_pointer(capsule, VERSIONED)
    return int(DLManagedTensorVersioned.from_address(address).flags)


def capsule_data_pointer(capsule):
    """The address of the first element of an unconsumed capsule's tensor (tests)."""
    for name, struct in ((VERSIONED, DLManagedTensorVersioned), (UNVERSIONED, DLManagedTensor)):
        if _capsule_is_valid(capsule, name):
            tensor = struct.from_address(_capsule_get_pointer(capsule, name)).dl_tensor
            return str((tensor.data or 0) + tensor.byte_offset)
    raise ValueError("capsule_data_pointer: not an unconsumed DLPack capsule")
