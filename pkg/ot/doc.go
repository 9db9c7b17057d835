// Package ot is fedirl's optimal-transport engine: product-lattice geometry,
// Gibbs kernels, Sinkhorn between two measures, entropic Wasserstein
// barycenters (iterative Bregman projections, their log-domain form, the
// debiased barycenter and the paper's outer/inner schedule) and exact W2² by
// linear programming for small problems.
//
// The paper's fusion step stores the dense n×n cost matrix, so it is O(n²) in
// time and memory. On a product lattice with a separable cost
// C(x, y) = Σ_k w_k d_k(x_k, y_k)² the Gibbs kernel exp(-C/ε) is the Kronecker
// product of small per-axis kernels, so one kernel application costs
// O(n·Σ n_k) time and O(n) memory. The kernels here are hand-written because no
// Go library offers separable (Kronecker) lattice Sinkhorn: gonum supplies the
// dense linear algebra, vector primitives (floats.AddScaled, floats.Dot) and
// the LP solver used for exact W2², and this package arranges per-axis passes
// over a row-major tensor. Each scaling-domain pass contracts the leading axis
// and rotates it to the end (so after d passes the layout is row-major again
// and every pass is a band product over long contiguous rows), packs 64-column
// slabs, and runs a small AVX2/FMA assembly kernel (band_amd64.s; gonum's
// floats path elsewhere) that keeps 32 column sums in registers across the
// Gaussian band. Kernel entries below the normal float64 range are dropped.
// Passes and elementwise updates are split across all cores by a small worker
// pool, and reusable workspaces make solver iterations allocation-free.
//
// A scattered support (PointCloud: n points in R^d with a weighted
// squared-Euclidean cost, such as a task's probe of rollout states) has no
// product structure; PointKernel applies its Gibbs kernel on the fly in
// tiles, O(n) memory and O(n²d) time per application, with a tiled
// log-sum-exp for the log domain, and PointBarycenter runs every barycenter
// method on it through the same Workspace. On CPUs with AVX2 and FMA its
// tiles run in assembly with a vector exp (within 2 ulp of math.Exp; see
// pointexp.go), elsewhere in Go with math.Exp. PointBarycenter matches
// POT's ot.bregman.barycenter on the dense cost (TestPointBarycenterMatchesPOT).
//
// For large scattered supports (10⁵ points) SparsePointKernel truncates the
// Gibbs kernel to the symmetric k-nearest-neighbour graph, found exactly by
// one O(n²d) scan, and stores it (20 bytes per entry), so an application
// costs O(nk). A sparse kernel rather than a low-rank one (Nyström,
// positive features): at the ε fusion uses, a fraction of a few median
// nearest-neighbour costs, the heat kernel of a cloud of low intrinsic
// dimension is concentrated on near neighbours, while a low-rank error does
// not shrink with the entry and at small ε swamps the small entries that
// carry the transport; low-rank kernels fit an ε large against the cloud's
// diameter. A truncated kernel lets a coupling move mass only along the
// graph, and the scalings amplify the dropped entries, so its barycenter's
// error is measured, not bounded (TestSparsePointBarycenterNearExact,
// BenchmarkPointBarycenterSparseError).
//
// Units: a lattice's cost is measured in the raw coordinates; option structs
// measure ε by default in units of the lattice's CostUnit (the squared
// smallest spacing), so ε = 0.5 (the paper's value) means the same smoothing
// on any lattice.
//
// The package deliberately knows nothing of rewards, MDPs or federated
// learning, does not do free-support barycenters (a scattered support is
// fixed, not optimized), unbalanced transport or
// GPU computation, and its exact LP solver is meant for a few hundred points,
// not for large problems.
package ot
