"Wrong answers for notebook 07's exercises (C++ templates)."
import re

from course.exercises.learner_code import solution_sections

from . import Wrong


def changed(exercise, *changes):
    "The solution's cell body of `exercise` with several (old, new) changes, each of a text found exactly once."
    preamble, sections = solution_sections(exercise.split('.')[0])
    text = preamble + sections[exercise]
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def endless_loop(cell, loop, how):
    "The sentence for a loop of CUDA C that never advances its counter."
    return (rf"the loop `{re.escape(loop)}` at line \d+ of the `#\| exercise {cell}` cell never advances its counter, so it never "
            rf"ends: {how}")


SWITCH_END = ("        case 32: if (relu) launch(matmul_epi_k<32, true>); else launch(matmul_epi_k<32, false>); break;\n"
              "        default: return cudaErrorInvalidValue;\n")
CASE_8 = "        case 8:  if (relu) launch(matmul_epi_k<8, true>);  else launch(matmul_epi_k<8, false>);  break;\n"
INTO_AN_ERROR = r"has no `break`: after its launch it runs on into `default:` and runs `return cudaErrorInvalidValue;`: the launcher " \
                r"reports an error for this case although its kernel was launched"

WRONG = [
    # 07.1: a template on the epilogue: bias, with or without a ReLU
    Wrong('07.1', 'a case without break',
          change=("launch(matmul_epi_k<16, false>); break;", "launch(matmul_epi_k<16, false>);"),
          expect=r"`case 16:` of the switch at line \d+ of the `#\| exercise 07.1` cell has no `break`: .*runs on into `case 32:`"),
    Wrong('07.1', 'the last case without break, into a default that launches nothing but returns an error',
          change=("launch(matmul_epi_k<32, false>); break;", "launch(matmul_epi_k<32, false>);"),
          expect=r"`case 32:` of the switch at line \d+ of the `#\| exercise 07\.1` cell " + INTO_AN_ERROR),
    Wrong('07.1', 'a case without break just before default, placed in the middle of the switch',
          change=(CASE_8 + "        case 16:", "        case 8:  if (relu) launch(matmul_epi_k<8, true>);  else launch(matmul_epi_k<8, false>);\n"
                                                 "        default: return cudaErrorInvalidValue;\n        case 16:"),
          expect=r"`case 8:` of the switch at line \d+ of the `#\| exercise 07\.1` cell " + INTO_AN_ERROR),
    Wrong('07.1', 'the last case without break, into a default that sets an error status',
          body=changed('07.1', (SWITCH_END, SWITCH_END.replace(" break;\n", "\n").replace("return cudaErrorInvalidValue;", "status = cudaErrorInvalidValue;")),
                       ("    switch (tw) {", "    cudaError_t status = cudaSuccess;\n    switch (tw) {"),
                       ("    return cudaGetLastError();", "    return status != cudaSuccess ? status : cudaGetLastError();")),
          expect=r"`case 32:` .* has no `break`: after its launch it runs on into `default:` and runs its statements too "
                 r"\(`status = cudaErrorInvalidValue;`\), which were meant for that label only"),
    Wrong('07.1', 'the dot product loop steps tc, not i (an endless loop)',
          change=("for (int i = 0; i < TW; ++i) p +=", "for (int i = 0; i < TW; ++tc) p +="),
          expect=endless_loop('07.1', 'for (int i = 0; i < TW; ++tc)', r"its step `\+\+tc` changes tc, not i or TW")),
    Wrong('07.1', 'the ReLU applied whatever RELU says',
          change=("if (RELU) p = fmaxf(p, 0.0f);", "p = fmaxf(p, 0.0f);"),
          expect=r"matmul_epi_k<16, false> clamps at 0 .*the ReLU must apply only when RELU is true"),
    Wrong('07.1', 'the ReLU forgotten',
          change=("        if (RELU) p = fmaxf(p, 0.0f);  // a constant condition: the <TW, false> kernels hold no trace of it\n", ""),
          expect=r"matmul_epi_k<16, true> never clamps at 0"),
    Wrong('07.1', 'tw = 8 missing from the dispatch',
          change=("        case 8:  if (relu) launch(matmul_epi_k<8, true>);  else launch(matmul_epi_k<8, false>);  break;\n", ""),
          expect=r"no kernel is compiled for TW=8, RELU=false"),
    Wrong('07.1', 'relu a run-time argument of the kernel',
          body=changed('07.1', ("template <int TW, bool RELU>", "template <int TW>"),
                       ("const float* bias, float* out, int h, int w, int k) {", "const float* bias, float* out, int h, int w, int k, bool relu) {"),
                       ("if (RELU) p = fmaxf", "if (relu) p = fmaxf"),
                       ("(m, n, bias, out, h, w, k); };", "(m, n, bias, out, h, w, k, relu); };"),
                       *[(f"if (relu) launch(matmul_epi_k<{tw}, true>);{pad} else launch(matmul_epi_k<{tw}, false>);",
                          f"launch(matmul_epi_k<{tw}>);") for tw, pad in ((8, ' '), (16, ''), (32, ''))]),
          expect=r"no kernel is compiled for TW=16, RELU=false: .*compiled now: matmul_epi_k<8>, matmul_epi_k<16>, matmul_epi_k<32>"),
    Wrong('07.1', 'the dispatch swaps the ReLU kernels',
          change=("case 32: if (relu) launch(matmul_epi_k<32, true>); else launch(matmul_epi_k<32, false>);",
                  "case 32: if (relu) launch(matmul_epi_k<32, false>); else launch(matmul_epi_k<32, true>);"),
          cpu='not checked here',
          expect=r"tw=32, relu=0 .*the result is relu\(m @ n \+ bias\)"),
    Wrong('07.1', 'the bias taken by row',
          change=("p += bias[c];", "p += bias[r];"),
          cpu='not checked here',
          expect=r"reads past the end \(or before the start\) of bias|the bias taken by row"),

    # 07.2: a template on two tile sizes
    Wrong('07.2', 'a tile missing from the dispatch',
          change=("    else if (th == 16 && tw == 32) launch(matmul_rect_tmpl_k<16, 32>, 16, 32);\n", ""),
          expect=r"no kernel is compiled for th=16, tw=32"),
    Wrong('07.2', 'the dot product looped to a run-time bound',
          change=("for (int i = 0; i < TK; ++i) p +=", "for (int i = 0; i < blockDim.x; ++i) p +="),
          expect=r"matmul_rect_tmpl_k<8, 32> has \d+ multiply-adds in its (?:PTX|SASS): .*unrolls the dot product into 32"),
    Wrong('07.2', 'the loop loading n steps tr, not i (an endless loop)',
          change=("for (int i = tr; i < TK; i += TH)", "for (int i = tr; i < TK; tr += TH)"),
          expect=endless_loop('07.2', 'for (int i = tr; i < TK; tr += TH)', r"its step `tr \+= TH` changes tr, not i or TK")),
    Wrong('07.2', 'the second barrier missing',
          change=("ns[i][tc];\n        __syncthreads();\n", "ns[i][tc];\n"),
          expect=r"matmul_rect_tmpl_k<8, 32>: a tiled kernel needs two __syncthreads\(\) per phase.*has 1\)"),
    Wrong('07.2', 'a barrier inside the guard',
          change=("        __syncthreads();\n        for (int i = 0; i < TK; ++i)",
                  "        if (r < h) __syncthreads();\n        for (int i = 0; i < TK; ++i)"),
          expect=r"the __syncthreads\(\) at line \d+ of the `#\| exercise 07.2` cell \(matmul_rect_tmpl_k\) is inside `if \(r < h\)`"),
    Wrong('07.2', 'the block launched as TH x TW threads',
          change=("dim3(TW, TH), 0, stream>>>", "dim3(TH, TW), 0, stream>>>"),
          cpu='not checked here',
          expect=r"th=8, tw=32 on m \d+x\d+ @ n \d+x\d+: (element \[\d+, \d+\] is|the result changes|the kernel writes|two runs)"),
    Wrong('07.2', 'the write guard lets row h through',
          change=("if (r < h && c < w) out[r*w + c] = p;", "if (r <= h && c < w) out[r*w + c] = p;"),
          cpu='not checked here',
          expect=r"writes \d+ element\(s\) past the end of out"),
]

# Right answers written unusually: each must not be 'not yet'.
RIGHT = [
    Wrong('07.1', 'default first, and the last case without break (nothing follows it)', expect='',
          body=changed('07.1', (SWITCH_END, SWITCH_END.split("\n")[0].replace(" break;", "") + "\n"),
                       ("    switch (tw) {\n", "    switch (tw) {\n        default: return cudaErrorInvalidValue;\n"))),
    Wrong('07.1', 'tw checked before the switch; the last case runs on into an empty default', expect='',
          body=changed('07.1', (SWITCH_END, SWITCH_END.replace(" break;\n", "\n").replace("return cudaErrorInvalidValue;", "break;")),
                       ("    switch (tw) {", "    if (tw != 8 && tw != 16 && tw != 32) return cudaErrorInvalidValue;\n    switch (tw) {"))),
]
