"""course.step_listings: a template's switches evaluated for one step, as the compiler would, on the text."""
import re

import pytest

from course.step_listings import constant_value, specialize, step_changes
from utils import import_notebook

TEMPLATE = r'''// a kernel with switches
template <int BN, bool PERSISTENT, int CLUSTER, int STORE>
__global__ void k(int* out, int units) {
    const int rank = CLUSTER > 1 ? cluster_rank() : 0, clusters = PERSISTENT ? gridDim.x / CLUSTER : units;
    if (CLUSTER > 1) cluster_sync(); else __syncthreads();
    if constexpr (STORE > 0) {
        stage(out);                     // through shared memory
        if (threadIdx.x == 0) store(out);
    } else {
        direct(out);
    }
    for (int r = 0; r < CLUSTER; ++r)
        if constexpr (CLUSTER > 1) arrive_cluster(r); else arrive();
    if constexpr (!PERSISTENT && BN / 64 == 4) once();    // (BN / 64: C's integer division)
    if (rank == 0) done(out);
}
'''


def test_constant_conditions_are_evaluated_and_others_left_alone():
    params = dict(BN=256, PERSISTENT=False, CLUSTER=2, STORE=0)
    assert constant_value('CLUSTER > 1', params) is True
    assert constant_value('!PERSISTENT && BN / 64 == 4', params) is True
    assert constant_value('STORE > 0 || false', params) is False
    assert constant_value('BN / 3 == 85', params) is True                       # integer division, as in C++
    assert constant_value('rank == 0', params) is None                          # a variable of the kernel
    assert constant_value('threadIdx.x == 0', params) is None


@pytest.mark.parametrize('persistent,cluster,store', [(p, c, s) for p in (False, True) for c in (1, 2) for s in (0, 1)])
def test_each_switch_keeps_only_the_branch_taken(persistent, cluster, store):
    text = specialize(TEMPLATE, dict(BN=256, PERSISTENT=persistent, CLUSTER=cluster, STORE=store), title='a step')
    assert 'if constexpr' not in text and 'template <' not in text and ' ? ' not in text
    assert ('cluster_sync();' in text) == (cluster > 1) and ('__syncthreads();' in text) == (cluster == 1)
    assert ('arrive_cluster(r);' in text) == (cluster > 1) and ('arrive();' in text) == (cluster == 1)
    assert ('stage(out);' in text) == bool(store) and ('direct(out);' in text) == (not store)
    assert ('gridDim.x / CLUSTER' in text) == persistent and ('once();' in text) == (not persistent)
    assert 'if (threadIdx.x == 0) store(out);' in text if store else 'store(out)' not in text
    assert 'if (rank == 0) done(out);' in text                                  # not a constant: kept as written
    assert text.startswith('// a kernel with switches\n// a step\n// the template\'s parameters: BN = 256, PERSISTENT = ')
    assert text.count('{') == text.count('}')
    for line in text.splitlines():
        assert len(line) - len(line.lstrip()) in (0, 4, 8), line                  # unwrapped blocks lose a level


def test_the_diff_of_two_steps_shows_only_what_changed():
    a = specialize(TEMPLATE, dict(BN=256, PERSISTENT=True, CLUSTER=1, STORE=0))
    b = specialize(TEMPLATE, dict(BN=256, PERSISTENT=True, CLUSTER=2, STORE=0))
    changed = [l for l in step_changes(a, b).splitlines() if l[:1] in '+-' and not l.startswith(('---', '+++'))]
    assert sorted(changed) == sorted(["-// the template's parameters: BN = 256, PERSISTENT = true, CLUSTER = 1, STORE = 0",
                                      "+// the template's parameters: BN = 256, PERSISTENT = true, CLUSTER = 2, STORE = 0",
                                      '-    const int rank = 0, clusters = gridDim.x / CLUSTER;',
                                      '+    const int rank = cluster_rank(), clusters = gridDim.x / CLUSTER;',
                                      '-    __syncthreads();', '+    cluster_sync();',
                                      '-        arrive();', '+        arrive_cluster(r);'])


nb13 = import_notebook('13')


def test_every_hopper_step_listing_has_no_switch_left_and_its_own_parameters():
    for step in nb13.HOPPER_STEPS:
        text = nb13.step_listing(step)
        assert 'if constexpr' not in text, step
        assert text.count('{') == text.count('}'), step
        params = nb13.hopper_kernel(step).params
        for name in ('STAGES', 'GROUP'):
            assert re.search(rf'\b{name} = {params[name]}\b', text), (step, name)


def test_the_hopper_ladder_changes_what_its_steps_say():
    def changed(a, b):
        return [l[1:].strip() for l in step_changes(a, b).splitlines() if l[:1] in '+-' and not l.startswith(('---', '+++'))]
    persistent = changed(nb13.step_listing('specialized'), nb13.step_listing('persistent'))
    assert 'const int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;' in persistent
    code = [l for l in persistent if not l.startswith('//')]
    assert sorted(code) == sorted(['const int units = cdiv(cdiv(M, BM), CLUSTER) * cdiv(N, BN);',   # used no more
                                   'const int cluster = blockIdx.x / CLUSTER, clusters = units;',
                                   'const int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;'])
    assert any(l.startswith('// PERSISTENT (step 4): ') for l in persistent)    # the switch's paragraph, now it is on
    order = changed(nb13.step_listing('persistent'), nb13.step_listing('persistent', GROUP=16))
    assert not [l for l in order if not l.startswith('//')]          # the tile order: a parameter, no line of code
    cluster = changed(nb13.step_listing('persistent', GROUP=16), nb13.step_listing('cluster'))
    assert any('tma_load_multicast' in l for l in cluster) and any('cluster_sync();' in l for l in cluster)
    in_flight = changed(nb13.step_listing('pipelined'), nb13.step_listing('in_flight'))
    assert 'wgmma_wait<0>();' in in_flight and any('IN_FLIGHT = 1' in l for l in in_flight)
    # step 2b is step 2's kernel with a group in flight: the same listing as that parameter gives, but for the title
    title = nb13.HOPPER_STEPS['pipelined'] + ', IN_FLIGHT = 1'
    assert nb13.step_listing('pipelined', IN_FLIGHT=1).replace(title, nb13.HOPPER_STEPS['in_flight']) == nb13.step_listing('in_flight')


LAMBDAS = r'''template <bool OVERLAP>
__global__ void k(int* out) {
    // Stores a box ...
    // ... of the results.
    auto store_box = [&](int b) { out[b] = 1; };
    auto helper = [&](int b) {             // used only by `later`
        return b + 1;
    };
    auto later = [&](int b) { out[helper(b)] = 2; };
    int told = 0;                          // (store_box's comment names it: a comment is not a call)
    if constexpr (OVERLAP) later(0); else store_box(0);
}
'''


def test_lambdas_a_step_never_calls_are_left_out_with_their_comments():
    kept = specialize(LAMBDAS, dict(OVERLAP=True))
    assert 'auto later' in kept and 'auto helper' in kept and 'store_box' not in kept.split('int told')[0]
    assert 'Stores a box' not in kept and '1 lambda(s) this step never calls left out' in kept
    plain = specialize(LAMBDAS, dict(OVERLAP=False))            # later unused, then helper, used only by later
    assert 'auto store_box' in plain and 'Stores a box' in plain and 'helper' not in plain.split('int told')[0]
    assert 'auto later' not in plain and '2 lambda(s) this step never calls left out' in plain


PRUNED = r'''// What every step does.
// OVERLAP (step 7): stores under the next tile;
// and a second line about it.
// STORE > 0 (step 6): stores through shared memory.
// And a general line again? No: still STORE's paragraph, up to the code.
template <bool OVERLAP, int STORE, int CLUSTER>
__global__ void k(int* out) {
    static_assert(!OVERLAP || STORE > 0, "overlap stores through the buffers");
    static_assert(CLUSTER == 1 || 64 % CLUSTER == 0, "boxes shared evenly");
    static_assert(STORE < 8, "at most 8 buffers");                 // no || : kept
    const int n = out[0], unused_anyway = 3;                        // unused in the template itself: kept
    int* told = out + 1;                                            // only the lambda below uses it
    const bool issuer = threadIdx.x == 0, other = n > 0;            // issuer: only the branch below
    auto store_box = [&](int b) { *told = b; };
    if constexpr (STORE > 0) {
        if (issuer && other) store_box(n);
    }
    out[n] = 1;
}
'''


@pytest.mark.parametrize('store', [0, 1])
def test_prune_leaves_out_what_only_the_removed_code_needed(store):
    params = dict(OVERLAP=False, STORE=store, CLUSTER=1)
    plain = specialize(PRUNED, params, title='a step')
    assert 'int* told' in plain and 'OVERLAP (step 7)' in plain           # the default: as before
    pruned = specialize(PRUNED, params, title='a step', prune=True)
    assert 'OVERLAP (step 7)' not in pruned and 'a second line about it' not in pruned
    assert ('STORE > 0 (step 6)' in pruned) == bool(store) and ('And a general line' in pruned) == bool(store)
    assert 'overlap stores through the buffers' not in pruned and 'boxes shared evenly' not in pruned
    assert 'at most 8 buffers' in pruned and 'unused_anyway' in pruned and 'out[n] = 1;' in pruned
    assert ('int* told' in pruned) == bool(store) and ('issuer' in pruned) == bool(store)
    assert pruned.startswith('// What every step does.\n')
    left = '2 static_asserts, comments on 1 switch off' if store else '1 lambda, 2 declarations, 2 static_asserts, comments on 2 switches off'
    assert f"// a step; left out for these switches: {left}\n" in pruned
    on = specialize(PRUNED, dict(OVERLAP=True, STORE=1, CLUSTER=2), prune=True)
    assert 'OVERLAP (step 7)' in on and 'overlap stores through the buffers' in on and 'boxes shared evenly' in on


def test_keep_template_writes_the_parameters_above_the_template_line():
    piece = '''// f for each unit.
template <bool STREAM_K, class F>
void each(F&& f) {
    if constexpr (!STREAM_K) f(0); else f(1);
}
'''
    text = specialize(piece, dict(STREAM_K=False), keep_template=True)
    assert text.startswith('// f for each unit.\n// here with STREAM_K = false\ntemplate <bool STREAM_K, class F>\n')
    assert 'f(0);' in text and 'f(1)' not in text


def test_the_hopper_listings_fit_a_screen_and_a_line():
    "Step 3 is shown whole in two parts (setup and producer, then the consumers), each within a screen; no line wraps."
    listing = nb13.step_listing('specialized')
    at = listing.index('    } else {')
    assert len(listing[:at].splitlines()) <= 45 and len(listing[at:].splitlines()) <= 40
    for name in ('told', 'issuer', 'pairs', 'from_issuer', 'STORE_BUFFERS > 0', 'OVERLAP (step 7)'):
        assert name not in listing, name
    for step in nb13.HOPPER_STEPS:
        assert max(len(line) for line in nb13.step_listing(step).splitlines()) <= 140, step


def test_patched_undoes_step_changes_and_refuses_a_diff_that_does_not_apply():
    from course.step_listings import patched
    before = specialize(TEMPLATE, dict(BN=256, PERSISTENT=True, CLUSTER=1, STORE=0))
    after = specialize(TEMPLATE, dict(BN=256, PERSISTENT=False, CLUSTER=2, STORE=1))
    assert patched(before, step_changes(before, after)) == after
    shown = step_changes(before, after).split('\n')[3:]              # as a notebook writes it: no ---/+++ nor first '  ...'
    assert patched(before, '\n'.join(l.rstrip() for l in shown)) == after     # an empty line: an empty line of context
    with pytest.raises(ValueError, match='does not apply'):
        patched(before.replace('__syncthreads();', 'sync();'), step_changes(before, after))


def test_code_only_leaves_out_lines_that_hold_only_a_comment():
    before = "// one comment\nint a = 1;   // a comment after code stays\nint b = 2;\n"
    after = "// the comment, rewritten\n// and a second line\nint a = 1;   // a comment after code stays\nint b = 3;\n"
    changed = [l for l in step_changes(before, after, code_only=True).splitlines()
               if l[:1] in '+-' and not l.startswith(('---', '+++'))]
    assert changed == ['-int b = 2;', '+int b = 3;']
    assert len([l for l in step_changes(before, after).splitlines() if l.startswith(('-//', '+//'))]) == 3
