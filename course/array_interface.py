"""What a torch tensor's `__cuda_array_interface__` holds, read from the installed torch's own source.

A CPU tensor has no such attribute, so on a machine without a GPU the only honest way to show what the
interface holds is to read the code that builds it. `torch_cuda_array_interface_entries` does that, with
Python's parser, and the notebooks print what it finds (on a GPU they show the real dict beside it)."""
import ast, inspect, textwrap


def torch_cuda_array_interface_entries():
    """The entries of the dict that `torch.Tensor.__cuda_array_interface__` returns: {name: value} where the
    value is a constant in the source (the version), else {name: the source of its expression}."""
    import torch
    getter = torch.Tensor.__cuda_array_interface__.fget
    tree = ast.parse(textwrap.dedent(inspect.getsource(getter)))
    built = [node.value for node in ast.walk(tree)
             if isinstance(node, ast.Return) and isinstance(node.value, ast.Call)
             and isinstance(node.value.func, ast.Name) and node.value.func.id == 'dict']
    if len(built) != 1:
        raise RuntimeError(f"torch {torch.__version__}'s __cuda_array_interface__ no longer ends in one "
                           f"`return dict(...)` ({len(built)} found): read its source instead")
    return {kw.arg: kw.value.value if isinstance(kw.value, ast.Constant) else ast.unparse(kw.value)
            for kw in built[0].keywords}
