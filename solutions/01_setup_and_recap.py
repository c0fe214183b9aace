"Reference solutions of notebooks/exercises/01_setup_and_recap.ipynb. Try the exercises first!"
# Exercise 01.1: a transpose kernel, with its bound check
def transpose_bk(blockIdx, threadIdx, blockDim, m, out, h, w):
    r = blockIdx.y*blockDim.y + threadIdx.y
    c = blockIdx.x*blockDim.x + threadIdx.x
    if r >= h or c >= w: return          # the edge blocks stick out of m: those threads have no element
    out[c*h + r] = m[r*w + c]


# Exercise 01.2: reject what a kernel must not be given
# The course's own input rules are a full answer: read them in course/input_checks.py (check_matmul_inputs).
from course.input_checks import check_matmul_inputs as check_inputs
