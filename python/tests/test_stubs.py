"""The type stubs beside the native module: generated at build time, they name everything it has."""
import ast
import pathlib

import wick
from wick import _wick


def test_stubs_cover_the_module():
    stub = pathlib.Path(_wick.__file__).with_name("_wick.pyi")
    tree = ast.parse(stub.read_text())
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    names |= {a.asname for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    public = {n for n in dir(_wick) if not n.startswith("_")}
    assert public <= names, public - names
    tensor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = {f.name for f in tensor.body if isinstance(f, ast.FunctionDef)}
    assert {"__getitem__", "__add__", "__array__", "__dlpack__", "numpy", "sum"} <= methods
    # The array API's keywords of __dlpack__, and custom kernels' keywords, as they are called.
    dlpack = next(f for f in tensor.body if isinstance(f, ast.FunctionDef) and f.name == "__dlpack__")
    assert [a.arg for a in dlpack.args.kwonlyargs] == ["stream", "max_version", "dl_device", "copy"]
    kernel = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CustomKernel")
    calls = {f.name: f for f in kernel.body if isinstance(f, ast.FunctionDef)}
    assert [a.arg for a in calls["__call__"].args.kwonlyargs] == [
        "inputs", "output_shapes", "threads", "params", "device"]
    assert [a.arg for a in calls["__init__"].args.kwonlyargs] == [
        "inputs", "outputs", "params", "glsl", "cuda", "threads_per_group"]
    assert (pathlib.Path(wick.__file__).parent / "py.typed").exists()
