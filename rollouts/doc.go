// Package rollouts tests the sidecar's canary endpoints (SPEC §5.2, §6)
// with the code of the controllers that call them: Argo Rollouts v1.9.0
// (its web metric provider, utils/evaluate and utils/analysis, on the
// AnalysisTemplate the README gives) drives GET /api/v1/verdict, and
// Flagger v1.36.1 (pkg/controller.CallWebhook and its Canary types, in a
// loop that follows Flagger's scheduler) drives POST /api/v1/flagger/{hook}.
// It is a module of its own so that the main module does not depend on
// Argo, Flagger and the Kubernetes libraries they bring.
//
// The sidecar runs in process against a real nats-server started in
// process, with a generated gold set and generated live, canary and shadow
// traffic stamped with a fake clock; nothing sleeps. Argo's analysis
// controller package cannot be imported (see argo_controller_test.go), so
// the few lines that turn measurements into a metric phase are transcribed
// and checked against Argo's own unit-test cases.
//
//	cd rollouts && go vet ./... && go test -count=1 ./...
package rollouts
