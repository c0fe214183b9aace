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
    assert len(persistent) == 6                      # the title, two lines of parameters, one line of the kernel
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
