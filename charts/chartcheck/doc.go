// Package chartcheck tests the deployment artefacts of shadoweval: the Helm
// chart in ../shadoweval and the Dockerfile and .dockerignore at the
// repository root. It is a module of its own so that the main module does
// not depend on the Kubernetes API types.
//
// The tests render the chart with the helm binary ($HELM, else helm on the
// PATH, else $(go env GOPATH)/bin/helm; `make chart` installs it) for the
// default values and every ci/*-values.yaml, decode every manifest strictly
// into the Kubernetes API types (the Prometheus Operator kinds into local
// structs that refuse unknown fields), and check them against the values,
// the Dockerfile and the shadoweval binary built from ../.. (`shadoweval
// config check` on the rendered configuration, `shadoweval config defaults`
// against the values schema). promtool checks the rendered rules when it is
// installed; without it the check is skipped, unless $CI is set.
package chartcheck
