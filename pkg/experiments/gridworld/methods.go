package gridworld

import (
	"errors"
	"fmt"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot/vg/draw"

	"github.com/fedirl/fedirl/pkg/fusion"
)

// DefaultFusionMethods are the fused columns of the study by default: the
// paper's two (mean, barycenter), the normalization control
// (normalized-mean), the debiased barycenter and the federated joint fit
// (gradient/Hessian rounds of the clients' summed likelihood, which must
// reach the pooled column).
var DefaultFusionMethods = []string{fusion.MethodMean, fusion.MethodNormalizedMean, fusion.MethodBarycenter, fusion.MethodDebiased, fusion.MethodJoint}

// perClientSuffix marks a fusion_methods entry fused with per-client σ.
const perClientSuffix = "/" + fusion.SigmaPerClient

// parseColumn splits a fusion_methods entry into its registry name and
// sigma mode ("" or fusion.SigmaPerClient).
func parseColumn(col string) (name, mode string, err error) {
	name = col
	if base, ok := strings.CutSuffix(col, perClientSuffix); ok {
		name, mode = base, fusion.SigmaPerClient
	}
	c, ok := fusion.Canonical(name)
	if ok && c != name && name != "" {
		return "", "", fmt.Errorf("fusion method %q is an alias of %q: write %q (columns print registry names)", name, c, c)
	}
	if !ok || name == "" {
		return "", "", fmt.Errorf("fusion method %q: want one of %s, optionally with %q for a reward-space method",
			col, strings.Join(fusion.Methods(), ", "), perClientSuffix)
	}
	return name, mode, nil
}

// methods returns the fused columns (FusionMethods, or the default).
func (c Config) methods() []string {
	if c.FusionMethods == nil {
		return DefaultFusionMethods
	}
	return c.FusionMethods
}

// validateMethods checks fusion_methods: known names, no repeats, "mean"
// and "barycenter" present, and every entry's options valid with the barycenter block.
func (c Config) validateMethods() error {
	ms := c.methods()
	if !slices.Contains(ms, fusion.MethodMean) || !slices.Contains(ms, fusion.MethodBarycenter) {
		return errors.New("fusion_methods: must include \"mean\" and \"barycenter\", the paper's two fusions (the reference of the paired differences, the bounds and Figure 2)")
	}
	for i, m := range ms {
		if slices.Index(ms, m) != i {
			return fmt.Errorf("fusion_methods[%d] = %q: listed twice", i, m)
		}
		if _, err := c.columnOptions(m); err != nil {
			return fmt.Errorf("fusion_methods[%d]: %w", i, err)
		}
	}
	return nil
}

// Pair is a declared paired comparison: column A minus column B.
type Pair struct{ A, B string }

// Label is the pair as tables and plots print it, "A − B".
func (p Pair) Label() string { return p.A + " − " + p.B }

// Key is the pair's JSON and CSV key, "a_minus_b" with "-" and "/" as "_".
func (p Pair) Key() string {
	r := strings.NewReplacer("-", "_", "/", "_")
	return r.Replace(p.A) + "_minus_" + r.Replace(p.B)
}

// DeclaredPairs are the paired comparisons of every table, sweep and plot,
// in this order: each fusion against the mean, the transport effect itself
// (barycenter − normalized-mean), and mean − local (in distribution only).
// A pair whose columns a study does not have is left out.
var DeclaredPairs = []Pair{
	{fusion.MethodBarycenter, fusion.MethodMean},
	{fusion.MethodDebiased, fusion.MethodMean},
	{fusion.MethodNormalizedMean, fusion.MethodMean},
	{fusion.MethodBarycenter, fusion.MethodNormalizedMean},
	{fusion.MethodMean, ColLocal},
	// The joint block's (declared before its first run, README-gridworld):
	// how far each one-shot fusion is from the pooled ceiling, and whether a
	// personalized reward beats the client's own and the shared one.
	{ColPooled, fusion.MethodMean},
	{ColPooled, fusion.MethodBarycenter},
	{ColPersonalized, ColLocal},
	{ColPersonalized, ColPooled},
	// the federated joint fit against the central pooled one: a check (≈ 0)
	{fusion.MethodJoint, ColPooled},
}

// pairs returns the declared pairs whose columns are among cols.
func pairs(cols []string) []Pair {
	var out []Pair
	for _, p := range DeclaredPairs {
		if slices.Contains(cols, p.A) && slices.Contains(cols, p.B) {
			out = append(out, p)
		}
	}
	return out
}

// columnStyle is a column's colour and glyph in every plot, keyed by name.
type columnStyle struct {
	Color color.Color
	Shape draw.GlyphDrawer
}

// styles fixes the look of the default columns; other registry names take
// the fallback palette by their position in fusion.Methods().
var styles = map[string]columnStyle{
	fusion.MethodBarycenter:     {color.RGBA{214, 39, 40, 255}, draw.CircleGlyph{}},
	fusion.MethodMean:           {color.RGBA{31, 119, 180, 255}, draw.SquareGlyph{}},
	fusion.MethodDebiased:       {color.RGBA{255, 127, 14, 255}, draw.TriangleGlyph{}},
	ColExpert:                   {color.RGBA{44, 160, 44, 255}, draw.PyramidGlyph{}},
	fusion.MethodNormalizedMean: {color.RGBA{148, 103, 189, 255}, draw.RingGlyph{}},
	ColLocal:                    {color.Gray{Y: 150}, draw.CrossGlyph{}},
	ColPooled:                   {color.RGBA{23, 190, 207, 255}, draw.PlusGlyph{}},
	ColPersonalized:             {color.RGBA{188, 189, 34, 255}, draw.BoxGlyph{}},
	fusion.MethodJoint:          {color.RGBA{127, 127, 127, 255}, draw.TriangleGlyph{}},
}

var fallbackStyles = []columnStyle{
	{color.RGBA{140, 86, 75, 255}, draw.BoxGlyph{}},
	{color.RGBA{227, 119, 194, 255}, draw.PlusGlyph{}},
	{color.RGBA{188, 189, 34, 255}, draw.CircleGlyph{}},
	{color.RGBA{23, 190, 207, 255}, draw.SquareGlyph{}},
	{color.RGBA{127, 127, 127, 255}, draw.TriangleGlyph{}},
}

// styleOf returns the style of a column (a "/per-client" variant is drawn
// like its method).
func styleOf(col string) columnStyle {
	name, _, _ := strings.Cut(col, "/")
	if s, ok := styles[name]; ok {
		return s
	}
	i := max(0, slices.Index(fusion.Methods(), name))
	return fallbackStyles[i%len(fallbackStyles)]
}

// pairStyles fixes the look of the declared pairs (a pair's A column would
// repeat: barycenter − mean and barycenter − normalized-mean).
var pairStyles = map[Pair]columnStyle{
	DeclaredPairs[0]: styles[fusion.MethodBarycenter],
	DeclaredPairs[1]: styles[fusion.MethodDebiased],
	DeclaredPairs[2]: styles[fusion.MethodNormalizedMean],
	DeclaredPairs[3]: {color.RGBA{140, 86, 75, 255}, draw.BoxGlyph{}},
	DeclaredPairs[4]: styles[fusion.MethodMean],
}

func pairStyle(p Pair) columnStyle {
	if s, ok := pairStyles[p]; ok {
		return s
	}
	return styleOf(p.A)
}
