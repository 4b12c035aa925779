# `make test` is the whole check: it installs what the tests need on a fresh
# Debian machine, then vets, tests and fuzzes every package, and ends with
# every skipped test and its reason, then the counts of all runs.
GO      ?= go
FUZZTIME ?= 5000x
SHELL   := /bin/bash

.PHONY: test deps vet unit race fuzz build clean testreport testreport-reset

# Each go test runs through internal/testreport, which prints a line per
# package, the output of failing tests and the skipped tests with their
# reasons, and records its results under REPORT_DIR for the summary that
# ends `make test`.
REPORT_DIR := $(CURDIR)/.testreport
TESTREPORT := $(REPORT_DIR)/testreport
RUNS       := unit race chart rollouts

test: testreport-reset testreport deps vet unit race fuzz chart rollouts
	@$(TESTREPORT) -summary $(foreach r,$(RUNS),$(REPORT_DIR)/$(r).json)

# A record left by an earlier run must not stand for one that did not run.
testreport-reset:
	@rm -f $(foreach r,$(RUNS),$(REPORT_DIR)/$(r).json)

testreport:
	@mkdir -p $(REPORT_DIR)
	@$(GO) build -o $(TESTREPORT) ./internal/testreport

# python3 runs the seed reference scorers in the differential tests; the
# golden files keep the Go tests meaningful without it. promtool (Debian
# package prometheus) and alertmanager check the generated alert rules and
# the Alertmanager output for real; headless chromium loads the status
# page; curl runs the README's commands. Those tests skip without them,
# unless CI is set. .ci/apt-install waits for another apt to finish rather
# than failing on its lock.
deps:
	@missing=; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus"; \
	command -v prometheus-alertmanager >/dev/null 2>&1 || command -v alertmanager >/dev/null 2>&1 || missing="$$missing prometheus-alertmanager"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  .ci/apt-install --no-install-recommends $$missing || echo "warning: could not install$$missing; the tests that need them skip (fail under CI=true)"; \
	fi; \
	if ! command -v chromium >/dev/null 2>&1; then \
	  echo "installing chromium"; \
	  .ci/apt-install chromium || echo "warning: chromium not installed; the status page browser tests skip (fail under CI=true)"; \
	fi
	$(GO) mod download

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

unit: testreport
	set -o pipefail; $(GO) test -json -count=1 ./... | $(TESTREPORT) -name unit -record $(REPORT_DIR)/unit.json

# The packages whose state several ingest goroutines share, under the race
# detector.
race: testreport
	set -o pipefail; $(GO) test -json -race -count=1 ./window/ ./wire/ ./stream/ ./sidecar/ | $(TESTREPORT) -name race -record $(REPORT_DIR)/race.json

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

# bin/shadoweval, its version from git when there is a repository
# (`shadoweval version`, shadoweval_build_info).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
build:
	$(GO) build -trimpath $(if $(VERSION),-ldflags "-X main.version=$(VERSION)") -o bin/shadoweval ./cmd/shadoweval


clean:
	rm -rf bin $(REPORT_DIR)

# The Helm chart and the Dockerfile: helm (installed with go install when
# missing, pinned to HELM_VERSION) lints and renders charts/shadoweval with
# the default values and every ci/*-values.yaml; charts/chartcheck, a module
# of its own (the Kubernetes API types stay out of the main module), decodes
# every manifest strictly and checks it, and checks the Dockerfile.
.PHONY: chart
HELM_VERSION ?= v3.22.0
HELM ?= $(or $(shell command -v helm 2>/dev/null),$(shell $(GO) env GOPATH)/bin/helm)

chart: testreport
	@test -x "$(HELM)" || { echo "installing helm $(HELM_VERSION) into $(dir $(HELM))"; GOBIN="$(abspath $(dir $(HELM)))" $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION); }
	$(HELM) lint --strict charts/shadoweval
	@set -e; for f in charts/shadoweval/ci/*-values.yaml; do \
	  echo "helm lint --strict + template: $$f"; \
	  $(HELM) lint --strict --quiet charts/shadoweval --values $$f >/dev/null || $(HELM) lint --strict charts/shadoweval --values $$f; \
	  $(HELM) template shadoweval charts/shadoweval --values $$f >/dev/null; \
	done
	$(HELM) template shadoweval charts/shadoweval >/dev/null
	@test -z "$$(gofmt -l charts)" || { echo "gofmt needed:"; gofmt -l charts; exit 1; }
	cd charts/chartcheck && $(GO) vet ./... && set -o pipefail && HELM="$(HELM)" $(GO) test -json -count=1 ./... | $(TESTREPORT) -name chart -record $(REPORT_DIR)/chart.json

# Argo Rollouts' and Flagger's own Go code drive the verdict endpoints of a
# running sidecar: rollouts/ is a module of its own, so that their
# Kubernetes dependency trees stay out of the main module.
.PHONY: rollouts
rollouts: testreport
	@test -z "$$(gofmt -l rollouts)" || { echo "gofmt needed:"; gofmt -l rollouts; exit 1; }
	cd rollouts && $(GO) vet ./... && set -o pipefail && $(GO) test -json -count=1 ./... | $(TESTREPORT) -name rollouts -record $(REPORT_DIR)/rollouts.json
