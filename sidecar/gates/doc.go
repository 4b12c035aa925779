// Package gates turns the sliding windows of package window into alert gate
// states and their transitions (SPEC §5.1), which drive the alerts. Canary
// promotion is not decided here but by the analyses of package
// sidecar/analysis.
//
// # Judging one gate for one arm
//
// A gate's kind (config.GateKinds: threshold, or compare_to when it names
// a compare_to arm) picks its judge in kinds; each kind is a file of its
// own that also writes the gate as a Prometheus expression (PromQLOf).
//
// Each evaluation judges every (gate, arm) pair once, at the time given to
// Evaluate, and gets one of three outcomes: pass, broken or inconclusive.
//
//   - No snapshot (arm or window unknown to the windows), an unknown metric
//     or a metric without value ("—") is inconclusive. So is a value from
//     fewer than max(min_samples, 1) samples: a metric whose empty
//     denominator gives a reference value (precision is 1 with no shipped
//     answer) never passes on zero samples, even with min_samples 0. With
//     compare_to, both arms need that many samples; Result.Samples is the
//     smaller count.
//   - The point value passes when `value op threshold`.
//   - With confidence c on a proportion metric, the Wilson interval at level
//     c is judged instead: broken when both ends fail, pass when both ends
//     pass, otherwise inconclusive. Confidence on any other kind of metric
//     (config refuses it; gates built in code may have it) is ignored and
//     the point value judged.
//   - compare_to R: the value is arm − R over the same window and the
//     threshold applies to the difference. For proportions with confidence
//     the Newcombe hybrid score interval (method 10) of the difference is
//     judged the way Wilson intervals are above. For delta_s_median and
//     delta_s_p90 the ΔS-cited sketches of both arms go through a two-sided
//     Mann-Whitney U test at level c (0.95 when the gate has no
//     confidence): the gate passes when the point difference of the
//     quantile passes; it is broken only when the point difference fails
//     AND the test says the arm is significantly (p < 1 − c) worse than R
//     in the failing direction (larger ΔS for `<`/`<=` gates, smaller for
//     `>`/`>=`); a failing point difference the test does not back is
//     inconclusive. The test protects against noise; the threshold is the
//     tolerated effect size. Other metrics (means, the retrieved-ΔS
//     quantiles, which have no sketch to test) judge the point difference.
//   - A compare_to gate never applies to its own reference arm, and a gate
//     without arms applies to every arm the windows know except the
//     overflow arm window.Other (it mixes unrelated arms); an arm listed in
//     a gate is judged even before it has data (inconclusive).
//
// # States
//
// State per (gate, arm), starting inconclusive; a Transition is returned
// for every change:
//
//	outcome       from inconclusive/ok/resolved   from pending                 from firing
//	pass          ok                              ok (never fired)             resolved
//	broken        pending (firing when for = 0)   firing once broken ≥ for     firing
//	inconclusive  inconclusive                    pending (kept)               firing (kept)
//
// In words:
//
//   - ActiveAt is the time of the first broken evaluation of the current
//     breakage; it is kept from pending to firing to resolved (the alert's
//     startsAt) and cleared on ok and inconclusive.
//   - `for` counts from ActiveAt; pending turns firing only on a broken
//     evaluation (an inconclusive one neither clears nor advances it). With
//     for 0 a broken gate goes straight to firing.
//   - Missing data never resolves: inconclusive keeps pending and firing;
//     only a passing evaluation clears them.
//   - resolved lasts one evaluation: the next one moves it to ok, pending
//     or firing, or inconclusive (that change is a transition too).
//
// # Verdicts
//
// A gate's own verdict is fail while pending or firing, pass while ok or
// resolved, inconclusive while inconclusive. The verdict of an arm over a
// window is fail when any applicable gate on that window fails, else
// inconclusive when any is inconclusive, else pass; with no applicable gate
// it is inconclusive. Verdicts are read from the last evaluation.
package gates
