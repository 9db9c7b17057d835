package ot

import "github.com/fedirl/fedirl/pkg/lattice"

// Axis is one factor of a product lattice (see lattice.Axis).
type Axis = lattice.Axis

// Lattice is a product grid with a separable squared cost (see lattice.Lattice).
type Lattice = lattice.Lattice

// UniformAxis returns an axis of n points with the given spacing (lattice.UniformAxis).
func UniformAxis(n int, spacing float64) Axis { return lattice.UniformAxis(n, spacing) }

// PeriodicAxis returns n points evenly spaced on a circle (lattice.PeriodicAxis).
func PeriodicAxis(n int, period float64) Axis { return lattice.PeriodicAxis(n, period) }

// CategoricalAxis returns an axis of n categories with 0/1 distance (lattice.CategoricalAxis).
func CategoricalAxis(n int) Axis { return lattice.CategoricalAxis(n) }

// UniformLattice returns a lattice of the given shape and one common spacing (lattice.UniformLattice).
func UniformLattice(spacing float64, shape ...int) Lattice {
	return lattice.UniformLattice(spacing, shape...)
}
