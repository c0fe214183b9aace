"""`%%needs_gpu`, `%%needs_two_gpus`, `%%needs_nvcc` and the like: run a cell only where there is a GPU (two GPUs, nvcc, ...).

Where the requirement holds the cell runs as if the magic were not there; elsewhere it prints one line
that says what is missing and that the cell was skipped. The test harness counts those lines as skipped
cells."""
from .cuda_toolkit import gpu_available, gpus_available, hopper_available, nvcc_available, tensor_cores_available

SKIP_MARK = '[skipped here]'

# magic name -> (the check, what is missing when it fails)
CELL_REQUIREMENTS = {'needs_gpu': (gpu_available, 'no CUDA GPU'),
                     'needs_two_gpus': (gpus_available, 'no second CUDA GPU'),
                     'needs_nvcc': (nvcc_available, 'no nvcc, the CUDA compiler'),
                     'needs_tensor_cores': (tensor_cores_available, 'no GPU of compute capability 8.0 or newer (A100, RTX 30 and 40, H100), whose tensor cores run bf16 and tf32'),
                     'needs_hopper': (hopper_available, 'no Hopper GPU (compute capability 9.0: H100, H200)')}


def _requirement_magic(name):
    available, missing = CELL_REQUIREMENTS[name]
    def magic(line, cell):
        from IPython import get_ipython
        if available():
            result = get_ipython().run_cell(cell, store_history=False)
            result.raise_error()  # an error in the cell is an error of the cell, for Jupyter and for nbclient
        else: print(f"{SKIP_MARK} {missing} on this machine, so this cell did not run: {line.strip() or name}")
    magic.__name__ = name
    magic.__doc__ = f"Cell magic `%%{name} [what the cell does]`: run the cell only where there is {missing[3:]}."
    return magic


def register_magics():
    "Register the magics with the running IPython, if there is one (importing utils does this)."
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None: return
    for name in CELL_REQUIREMENTS: ip.register_magic_function(_requirement_magic(name), magic_kind='cell')
