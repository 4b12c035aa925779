package checks

import (
	"errors"
	"math"
	"testing"
)

func TestDeltaS(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name     string
		question []float64
		item     []float64
		want     float64
		wantErr  error
	}{
		{"identical", []float64{1, 0}, []float64{1, 0}, 0, nil},
		{"same direction, other length", []float64{0.1, 0.2, 0.3}, []float64{10, 20, 30}, 0, nil},
		{"orthogonal", []float64{1, 0}, []float64{0, 1}, 1, nil},
		{"opposite clamps to 1", []float64{1, 0}, []float64{-1, 0}, 1, nil},
		{"obtuse clamps to 1", []float64{1, 0, 0}, []float64{-1, 1, 0}, 1, nil},
		{"45 degrees", []float64{1, 1}, []float64{1, 0}, 0.29289321881345254, nil},
		{"3-4-5", []float64{3, 4}, []float64{4, 3}, 0.04, nil},
		{"mixed signs", []float64{1, 2, 3}, []float64{-1, 0.5, 2}, 0.3001457877762347, nil},
		{"zero question", []float64{0, 0}, []float64{1, 0}, 1, nil},
		{"zero item", []float64{1, 0}, []float64{0, 0}, 1, nil},
		{"negative zero is zero", []float64{math.Copysign(0, -1)}, []float64{1}, 1, nil},
		{"both empty", []float64{}, []float64{}, 1, nil},
		{"both nil", nil, nil, 1, nil},
		{"huge values do not overflow", []float64{1e200, 1e200}, []float64{1e200, 0}, 0.29289321881345254, nil},
		{"tiny values do not underflow", []float64{1e-200, 1e-200}, []float64{1e-200, 0}, 0.29289321881345254, nil},
		{"subnormal", []float64{5e-324}, []float64{5e-324}, 0, nil},
		{"max float", []float64{math.MaxFloat64, -math.MaxFloat64}, []float64{math.MaxFloat64, -math.MaxFloat64}, 0, nil},
		{"length mismatch", []float64{1, 0}, []float64{1}, 0, ErrVectorLength},
		{"nil vs non-empty", nil, []float64{1}, 0, ErrVectorLength},
		{"NaN in question", []float64{nan, 1}, []float64{1, 1}, 0, ErrVectorNotFinite},
		{"Inf in item", []float64{1, 1}, []float64{inf, 1}, 0, ErrVectorNotFinite},
		{"NaN in zero-looking item", []float64{1, 1}, []float64{0, nan}, 0, ErrVectorNotFinite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DeltaS(tt.question, tt.item)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("DeltaS(%v, %v) error = %v, want %v", tt.question, tt.item, err, tt.wantErr)
			}
			if math.IsNaN(got) || got < 0 || got > 1 {
				t.Fatalf("DeltaS(%v, %v) = %v, outside [0,1]", tt.question, tt.item, got)
			}
			if math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("DeltaS(%v, %v) = %v, want %v", tt.question, tt.item, got, tt.want)
			}
		})
	}
}

func TestZoneOf(t *testing.T) {
	tests := []struct {
		ds   float64
		want Zone
		name string
	}{
		{-0.5, ZoneStable, "stable"},
		{0, ZoneStable, "stable"},
		{0.3999999999, ZoneStable, "stable"},
		{0.40, ZoneTransitional, "transitional"},
		{0.59, ZoneTransitional, "transitional"},
		{0.60, ZoneRisk, "risk"},
		{0.8499999, ZoneRisk, "risk"},
		{0.85, ZoneDanger, "danger"},
		{1, ZoneDanger, "danger"},
		{7, ZoneDanger, "danger"},
		{math.NaN(), ZoneDanger, "danger"},
	}
	for _, tt := range tests {
		got := ZoneOf(tt.ds)
		if got != tt.want {
			t.Errorf("ZoneOf(%v) = %v, want %v", tt.ds, got, tt.want)
		}
		if got.String() != tt.name {
			t.Errorf("ZoneOf(%v).String() = %q, want %q", tt.ds, got.String(), tt.name)
		}
	}
	if s := Zone(9).String(); s != "Zone(9)" {
		t.Errorf("Zone(9).String() = %q", s)
	}
}
