"Showing what kernels print with printf in the notebook cell that launched them."


class kernel_output:
    """Context manager that shows, in the notebook cell, what kernels print with printf.

    A kernel's printf lands in a device buffer that the CUDA runtime writes to the process's C-level
    stdout when the host synchronizes; Jupyter only shows Python's sys.stdout. On exit this
    synchronizes the GPU, captures that C-level output with wurlitzer and prints it from Python."""

    def __enter__(self):
        from wurlitzer import pipes
        self._pipes = pipes()
        self._out, self._err = self._pipes.__enter__()
        return self

    def __exit__(self, *exc):
        import torch
        try:
            if torch.cuda.is_available(): torch.cuda.synchronize()
        finally:
            self._pipes.__exit__(*exc)
        text = self._out.getvalue() + self._err.getvalue()
        if text: print(text, end='')
        return False
