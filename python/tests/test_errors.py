"""wick::Error kinds as Python exceptions, with wick's messages."""
import pytest

import wick


def test_error_classes():
    for cls, builtin in [(wick.ShapeError, ValueError), (wick.DTypeError, TypeError),
                         (wick.DeviceError, RuntimeError), (wick.OutOfRangeError, IndexError),
                         (wick.UnsupportedError, NotImplementedError), (wick.IoError, OSError),
                         (wick.ParseError, ValueError), (wick.OutOfMemoryError, MemoryError),
                         (wick.InternalError, RuntimeError)]:
        assert issubclass(cls, wick.Error) and issubclass(cls, builtin)


def test_messages_name_op_and_shapes():
    a, b = wick.zeros((2, 3)), wick.zeros((4, 5))
    with pytest.raises(wick.ShapeError, match=r"\[2, 3\].*\[4, 5\]") as e:
        a + b
    assert e.value.kind == "shape"
    with pytest.raises(wick.DTypeError):
        a + wick.zeros((2, 3), dtype=wick.i64)
    with pytest.raises(wick.ShapeError, match="matmul"):
        a @ wick.zeros((2, 3))
    with pytest.raises(wick.OutOfRangeError):
        a.narrow(1, 2, 5)
    with pytest.raises(wick.ShapeError, match="undefined tensor"):
        wick.Tensor().exp()
    with pytest.raises(wick.IoError, match="no/such/file.gguf"):
        wick.Llama.load("no/such/file.gguf")
    with pytest.raises(wick.DeviceError):
        wick.Device("cuda:99")
