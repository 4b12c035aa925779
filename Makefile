# `make test` is the whole check: it installs what the tests need on a fresh
# Debian machine, then vets, tests and fuzzes every package.
GO      ?= go
FUZZTIME ?= 5000x

.PHONY: test deps vet unit race fuzz build clean

test: deps vet unit race fuzz chart rollouts

# python3 runs the seed reference scorers in the differential tests; the
# golden files keep the Go tests meaningful without it. promtool (Debian
# package prometheus) and alertmanager check the generated alert rules and
# the Alertmanager output for real; headless chromium loads the status
# page; those tests skip without them, unless CI is set.
deps:
	@command -v python3 >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq python3 >/dev/null; } || echo "warning: python3 not installed; live differential tests will skip"
	@command -v promtool >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || echo "warning: promtool not installed; the alert rule tests will skip (fail under CI=true)"
	@command -v prometheus-alertmanager >/dev/null 2>&1 || command -v alertmanager >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus-alertmanager >/dev/null; } || echo "warning: alertmanager not installed; the Alertmanager tests will skip (fail under CI=true)"
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || echo "warning: chromium not installed; the status page browser tests will skip (fail under CI=true)"
	$(GO) mod download

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

# The packages whose state several ingest goroutines share, under the race
# detector.
race:
	$(GO) test -race -count=1 ./window/ ./stream/ ./sidecar/

# Every Fuzz target runs FUZZTIME on top of its committed corpus: a count
# of inputs, not a duration, because Go 1.26's fuzz coordinator can fail a
# duration-limited run with "context deadline exceeded" when the deadline
# catches a worker mid-input (golang/go#75804, fixed in Go 1.27); a count
# has no deadline to race. 5000 inputs take 1-6 s per target here.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for target in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "fuzz $$pkg $$target"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

build:
	$(GO) build -o bin/shadoweval ./cmd/shadoweval


clean:
	rm -rf bin

# The Helm chart and the Dockerfile: helm (installed with go install when
# missing, pinned to HELM_VERSION) lints and renders charts/shadoweval with
# the default values and every ci/*-values.yaml; charts/chartcheck, a module
# of its own (the Kubernetes API types stay out of the main module), decodes
# every manifest strictly and checks it, and checks the Dockerfile.
.PHONY: chart
HELM_VERSION ?= v3.22.0
HELM ?= $(or $(shell command -v helm 2>/dev/null),$(shell $(GO) env GOPATH)/bin/helm)

chart:
	@test -x "$(HELM)" || { echo "installing helm $(HELM_VERSION) into $(dir $(HELM))"; GOBIN="$(abspath $(dir $(HELM)))" $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION); }
	$(HELM) lint --strict charts/shadoweval
	@set -e; for f in charts/shadoweval/ci/*-values.yaml; do \
	  echo "helm lint --strict + template: $$f"; \
	  $(HELM) lint --strict --quiet charts/shadoweval --values $$f >/dev/null || $(HELM) lint --strict charts/shadoweval --values $$f; \
	  $(HELM) template shadoweval charts/shadoweval --values $$f >/dev/null; \
	done
	$(HELM) template shadoweval charts/shadoweval >/dev/null
	@test -z "$$(gofmt -l charts)" || { echo "gofmt needed:"; gofmt -l charts; exit 1; }
	cd charts/chartcheck && $(GO) vet ./... && HELM="$(HELM)" $(GO) test -count=1 ./...

# Argo Rollouts' and Flagger's own Go code drive the verdict endpoints of a
# running sidecar: rollouts/ is a module of its own, so that their
# Kubernetes dependency trees stay out of the main module.
.PHONY: rollouts
rollouts:
	@test -z "$$(gofmt -l rollouts)" || { echo "gofmt needed:"; gofmt -l rollouts; exit 1; }
	cd rollouts && $(GO) vet ./... && $(GO) test -count=1 ./...
