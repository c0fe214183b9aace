"""The machinery behind the course's notebooks, one concern per module.

`utils.py` (next to the notebooks' folder) is what a learner opens beside the lecture: the lecture's
own helpers, and imports of what the notebooks use from here.

| module | what it holds |
| --- | --- |
| `cuda_toolkit` | finding nvcc and the GPU; the one-sentence error when either is missing; the kernel cache folder |
| `compile_errors` | turning a compiler's log into short errors that point at the learner's line |
| `cuda_library` | `compile_cuda`: a plain `.cu` built by nvcc into a shared library, its launchers called with ctypes |
| `disassembly` | the machine code (SASS) or PTX that nvcc makes of a source, and one kernel's part of it |
| `cell_magics` | `%%needs_gpu`, `%%needs_two_gpus`, `%%needs_nvcc`, `%%needs_tensor_cores` and `%%needs_hopper`: run a cell only where the GPU (two of them, compute capability 8.0 or newer, Hopper) or nvcc is there |
| `input_checks` | `check_matmul_inputs`: the input rules every matmul wrapper of the course shares |
| `correctness` | the course's test shapes, and `check_against_torch`, the one correctness check of every kernel |
| `notebook_import` | `import_notebook`: the `#| export` cells of a notebook, as a module |
| `timing` | `cuda_time_ms`: timing with CUDA events; `compare_fairly`: kernels interleaved on L2-overflowing inputs, median and middle half, and a verdict only where the spreads do not overlap and the medians differ by more than 2%; `events_ms`, the one CUDA-event measurement both use; `cpu_us_per_call`: what a call costs the CPU (its kernels queued, not run) |
| `launch_queue` | a model of calls queued on a GPU stream (a call takes the CPU's time or the GPU's, whichever is longer) and its timeline drawing |
| `printf_capture` | `kernel_output`: a kernel's printf, shown in the notebook cell |
| `drawings` | the figures the notebooks draw: the tiling of notebook 02, the opcode counts of notebook 07, the warp-tile map and the double-buffering timeline of notebook 10, notebook 17's stored tiles, batch strides and a scheduler's issue slots |
| `memory_access` | access maps and the sector model of coalescing, read from the simulator's trace, and of a tile's float-by-float loads in each of notebook 10's layouts; their drawings; the memory-traffic table from ncu |
| `shared_banks` | the model of shared-memory banks (32 banks of 4 bytes, passes per warp access) and the bank map drawing |
| `double_buffering` | an event model of one block with one or two shared buffers: loads, stores, math and barriers in time |
| `barrier_timeline` | two threads of a block in time, with and without the second barrier, and where one overwrites the tiles the other still reads; its drawing |
| `template_variants` | `TemplateVariant`: one compiled instantiation of a template kernel (fp32 or bf16; aligned and unaligned versions where the template asks), its launcher, and its resources; `SplitK` and `SPLIT_K_LAUNCHER`: a kernel run with K in pieces, added by a second pass, in a workspace kept per stream; `Padded`: a candidate run on zero-padded copies whose rows start on 16 bytes |
| `roofline` | datasheet and measured ceilings, arithmetic intensity, padding waste, and the roofline chart |
| `array_interface` | what torch's `__cuda_array_interface__` holds (read from torch's own source) |
| `memcheck` | running a script under compute-sanitizer's tools (memcheck, racecheck, synccheck) and reading their findings; `sanitize`: one line per tool |
| `tensor_core_fragments` | a Python model of mma.sync's fragments (which lane holds which element of A, B, C/D), one warp's mma on registers, TF32 and bf16 rounding, ldmatrix and its bank passes, the XOR swizzle, and the lane map drawing |
| `reduced_precision` | how wrong a tensor-core matmul may be: the error against float64 and the bound bf16 or TF32 allows, random inputs in a precision, the check of a kernel on shapes, and cuBLAS in each precision |
| `mbarrier_pipeline` | a model of Hopper's mbarrier (arrivals, transaction bytes, phase parity) and of a TMA producer/consumer pipeline on it, which finds hangs and races, and its timeline drawing |
| `tuning_cache` | autotuning winners kept on disk, keyed by GPU, code version, shape and dtype, so that a later session pays nothing for a shape tuned before; `remembered` for other per-machine results (a model's calibration) |
| `model_tuning` | an autotuner that answers in seconds: a model of the kernel (waves x (overhead + steps x step), per-variant rates calibrated once per machine, aligned rows and not) ranks every variant, split of K and padding, and only its shortlist is timed (its best, 8 or as many as half a second of timing allows, and the best of each tile shape), the 3 fastest again, longer |
| `waves` | how a matmul's tiles fill the GPU: tiles, waves, tile quantization and split-K, modelled on a CPU with a time model and a drawing of the waves |
| `stream_k` | stream-K for a persistent kernel's last round: which cluster multiplies which stretch of K of which unit, who finishes a shared unit, the rule (with the measured cost of handing partial sums over) that says when it pays, and a drawing of the schedule |
| `gluon_matmul` | a bf16 matmul in Gluon (Triton's lower-level language): TMA, mbarriers, wgmma and a TMA store from Python |
| `hopper_tuning` | notebook 14: the Hopper kernel's switches chosen per shape (a model calibrated once per GPU, a timed shortlist, winners on disk), padded copies for rows TMA cannot copy |
| `hopper_tf32` | notebook 14: TF32 wgmma for fp32 inputs (C's transpose, B^T from registers), its index arithmetic modelled on the CPU |
| `hopper_shapes` | notebook 14 and bench/hopper_shapes.py: the published shape set, measured by both timers, and the target lines |
| `hopper_dispatch` | `dispatch_bf16`: the input check, the GPU check and the TMA-or-fallback choice of the Hopper matmul wrappers |
| `targets` | `against_target`: a time against a reference's, said as met or missed by how much |
| `climb` | the one list of the course's GPU kernels (notebook 15's too), and the climb so far: every kernel up to a notebook timed together against cuBLAS and drawn, one bar each, at the end of each lesson |
| `step_listings` | one step's kernel whole: a template's compile-time switches evaluated on the text (`if constexpr`, constant ifs and ternaries), and the diff of two steps |
| `wgmma_layout` | where TMA's 128-byte swizzle puts each value of a tile and where a wgmma matrix descriptor (LBO, SBO) reads it, the count of values a descriptor misplaces, and the descriptor's bits |
| `autotune` | `compile_all` (many variants, nvcc in parallel) and `autotune` (time them, fastest first) |
| `profiling` | `ncu_counters`: hardware counters from Nsight Compute for one kernel launch; `profile_each` (one launch per step, each in a fresh process), `notebook_launch` and `print_counters`; `ncu_launches(clocks_as_found=True)` reads them at the clock the GPU sets; `cuda_profile` (torch's profiler), `kernel_grids` (the kernels it saw, with their grids) and `launched_kernels` (those a call launches) |
| `issue_model` | notebook 17: an fp32 product's issue-bound time (warp instructions over schedulers x clock x the share of cycles that issue), the shares of a scheduler's cycles, the factors a gap splits into, what a cuBLAS kernel's name says of it, and how its tile lies on our C (`tile_in_our_terms`, from the launch's grid) |
| `triton_matmul` | the peer to beat: an autotuned Triton matmul in fp32, TF32 or bf16, and one line where Triton is missing |
| `exercises` | the exercise checker (a package): `check('04.1')` and `hint('04.1')` in an exercise notebook, `python -m course.exercises` in a shell |
| `exercises.verdict` | the three outcomes: passed, not yet (with its sentence), not checked here (with what the machine lacks) |
| `exercises.registry` | the list of exercises: id, title, check, hints |
| `exercises.learner_code` | the learner's cells (saved notebook, Jupyter history, solutions), run so that sources, lines and errors point at them |
| `exercises.watchdog` | stopping an endless loop in the learner's code, with the thread, the line and the loop, and no thread left |
| `exercises.isolation` | on a GPU, each GPU exercise's check in a child process, so a faulting kernel leaves the notebook's CUDA context alone |
| `exercises.barrier_placement` | barriers inside branches, after early returns, or missing between fill and read, read from Python or CUDA C source |
| `exercises.endless_loops` | loops of CUDA C that never advance their counter (so never end), read from the source with their lines |
| `exercises.ptx_dataflow` | a kernel's PTX followed register by register: where each address comes from (parameters, shared arrays, the thread index), how it moves from lane to lane of a warp, and which comparisons decide whether a load runs |
| `exercises.parts` | what the checks are made of: running the learner's code, comparing with torch, traffic limits, machine code, compute-sanitizer, speed |
| `exercises.simulated`, `exercises.gpu_kernels` | what the checks of Python kernels, and of CUDA C and Numba kernels, share |
| `exercises.lesson_01` ... `lesson_13` | the checks of each exercise notebook |
| `checked_simulator` | the Python GPU simulator the checker runs Python kernels in: bounds, per-thread traffic, races, deadlocks |
| `cluster_model` | what notebook 13's steps 4 and 5 buy in memory traffic: the bytes a block asks L2 for with and without TMA multicast, the tiles a persistent round computes in each tile order and the panels of A and B it reads (and a whole run's DRAM reads, estimated), with a drawing of each |
| `hopper_ladder` | notebook 13's machinery: its kernels' files read back, their pieces shown, a step's variant, listing, wrapper and timing, and one step's line against the step before |
| `overlap_model` | a layer split over GPUs as two streams of work (transfers and multiplies), serial or a ring in chunks, scheduled on a CPU and drawn, a measured layer's streams beside it, and where its time went (`time_by_kind`) |
| `tensor_parallel` | column- and row-parallel layers with torch.distributed: serial (a collective and a multiply), as a ring of point-to-point transfers issued from a side stream, and pulled by the copy engines (`PeerShards`); `Timeline`, a layer's streams measured with CUDA events |
| `tp_run` | `launch`: the layers run in several processes by torchrun (NCCL on GPUs, gloo on a CPU, NVLink multicast off), checked against float64 or timed (alone and queued, with GPU 0's timeline), results read back |
| `consumer_schedules` | notebook 14's step 10: two consumer warpgroups sharing the tensor cores, cooperative or ping-pong, played out in time and drawn |
| `torch_matmul` | `DropInMatmul`: notebook 17's kernel (or a stand-in) as torch.matmul for 2-D and 3-D float32 tensors (layouts read where they lie, a batch in one launch, broadcasting, padded copies where chosen), `plan`, how a call runs, and `DROP_IN_LAUNCHER`, the kernel's launcher |
"""
