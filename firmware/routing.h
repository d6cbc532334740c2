// Mesh routing: the looping algorithm that sets a Beneš network's elements so that every input
// reaches the output a permutation asks for. Rearrangeably non-blocking: any permutation routes,
// but changing one pair may change elements on other paths (docs/mesh.md).
#pragma once

#include "firmware/benes.h"
#include "firmware/result.h"

#include <vector>

namespace mxtb::firmware {

constexpr int kUnused = -1;

// perm[p] is the output port that input port p must reach, or kUnused. Outputs no input asks for
// stay unused. Errors name what is wrong: the size, an entry out of range, a duplicate target.
std::string check_permutation(int ports, const std::vector<int>& perm);

// A partial permutation made complete, deterministically: unused inputs, in ascending order,
// take the unused outputs in ascending order; with `previous` (a complete permutation), an
// unused input first keeps its previous output when no mapped input takes it. perm must pass
// check_permutation.
std::vector<int> complete_permutation(const std::vector<int>& perm, const std::vector<int>* previous = nullptr);

// The state of every element (index stage * ports / 2 + row) such that input p reaches output
// perm[p] for every mapped p. With `now` (every element's state as the mesh runs it), a circuit
// that did not change keeps its elements, so no circuit but the changed ones loses light while the
// mesh moves (docs/mesh.md): the changed circuits are searched paths through the elements the
// unchanged ones leave, and every element no circuit uses keeps its state. Where the unchanged
// circuits leave no such paths (rearranging is then unavoidable), the looping algorithm routes the
// whole map, each loop taking whichever of its two settings changes fewer of its elements, unused
// ports keeping their paths' ends.
// `around` false: the looping try alone. `port_xpu` (per port: the XPU whose lane it is, -1 for a
// fibre port): where unchanged circuits must be released, those with an end at an XPU a changed
// circuit ends at are released first. They belong to the tenant whose circuits change (a tenant's
// circuits join its own XPUs), whose collective the change interrupts anyway; a circuit of another
// tenant is moved only where none of them makes room (docs/rack.md, "Several tenants").
Result<std::vector<ElementState>> route(const BenesTopology& topology, const std::vector<int>& perm,
                                        const std::vector<ElementState>* now = nullptr, bool around = true,
                                        const std::vector<int>* port_xpu = nullptr);
// The inputs of `perm` whose circuit stays (`before` already takes them to their outputs) yet whose
// path changes between `before` and `after`: circuits a rearrangement moved, which lose light
// while the mesh settles.
int moved_circuits(const BenesTopology& topology, const std::vector<int>& perm, const std::vector<ElementState>& before,
                   const std::vector<ElementState>& after);

// Spare-ready routing (docs/mesh.md, "Spare-ready routing"): a spare takes a dead XPU's place
// with no other circuit moved only where the circuits that stay leave its circuits paths, which
// depends on how the map was routed. A substitution: every port of one tenant XPU (a port of it
// used, as an input or an output) relabelled to a spare XPU's port of the same lane (none of its
// ports used), as inputs and as outputs; `port_xpu` as for route(). It is clean when it routes
// around the circuits that stay with none released, as route() tries first (with its budget).
struct SpareReadiness {
  int substitutions = 0;  // tenant XPUs times spare XPUs (of as many ports)
  int clean = 0;          // of them, routed with no circuit that stays moved
};
SpareReadiness spare_readiness(const BenesTopology& topology, const std::vector<int>& perm, const std::vector<ElementState>& states,
                               const std::vector<int>& port_xpu);
// A map routed whole the spare-ready way: every unused lane (a port with an XPU in `port_xpu` that
// no input uses and no input reaches) hears its own light (loopback), the other unused ports are
// completed in ascending order, and the looping algorithm routes it from nothing. A lane given
// another port's light trains with it, and the words it carries are lost when its XPU is taken as
// a spare. With the rack's fibres planned for it (sim/rack/spare_ready.h), this routing leaves every
// substitution of the shipped racks clean (docs/rack.md).
Result<std::vector<ElementState>> route_whole_map(const BenesTopology& topology, const std::vector<int>& perm,
                                                  const std::vector<int>& port_xpu);

// The same for a mesh of `ports` ports (fails also when the port count is invalid).
Result<std::vector<ElementState>> route(int ports, const std::vector<int>& perm);

}  // namespace mxtb::firmware
