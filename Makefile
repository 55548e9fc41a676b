# pramkit — build, test, demo and benchmark targets. `make help` lists them.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/pramkit/pramkit/pkg/version.Version=$(VERSION)
TOOLS := sample encrypt perturb decrypt estimate anonymize
FUZZTIME ?= 5s

.PHONY: help build test vet unit fuzz demo bench figures clean

help:
	@echo "make build  - build the tools into ./bin"
	@echo "make test   - go vet, all tests (unit, statistical, end-to-end), a short run of each fuzz target"
	@echo "make demo   - fetch UCI Adult and run the toolchain on it"
	@echo "make bench  - rows/s and peak memory per tool on generated 1M- and 10M-row tables"
	@echo "make figures - recompute the papers' figures on UCI Adult into out/figures (PNG + CSV)"

build:
	@mkdir -p bin
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ $(addprefix ./cmd/,$(TOOLS))

test: vet unit fuzz

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

# Each fuzz target runs briefly; `make fuzz FUZZTIME=5m` for a longer hunt.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzCSVReader$$' -fuzztime=$(FUZZTIME) ./pkg/table
	$(GO) test -run='^$$' -fuzz='^FuzzCSVScannerMatchesEncodingCSV$$' -fuzztime=$(FUZZTIME) ./pkg/table
	$(GO) test -run='^$$' -fuzz='^FuzzArrowReader$$' -fuzztime=$(FUZZTIME) ./pkg/table
	$(GO) test -run='^$$' -fuzz='^FuzzParquetReader$$' -fuzztime=$(FUZZTIME) ./pkg/table
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./pkg/codebook
	$(GO) test -run='^$$' -fuzz='^FuzzCountParseQuery$$' -fuzztime=$(FUZZTIME) ./pkg/countquery

demo: build
	bash scripts/demo.sh

bench: build
	bash scripts/bench.sh

# Plots live in scripts/figures so that gonum/plot stays out of the tool binaries.
figures:
	bash scripts/fetch-adult.sh
	$(GO) run ./scripts/figures -out out/figures

clean:
	rm -rf bin out
