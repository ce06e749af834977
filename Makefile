# gdsload: make demo (build, make a small data set, load and benchmark it)
# and make test (the whole test suite, as CI runs it).
GO      ?= go
BIN     := bin/gdsload
PKGS    := ./...
# Fuzz time per target for `make fuzz` (short, as a smoke test).
FUZZTIME ?= 10s
DEMO_DIR ?= demo-data

# MinIO for the object-store tests: the version pinned in
# internal/miniotest, go-installed once into the tools cache where the tests
# look for it (or set GDSLOAD_MINIO to a binary). MinIO is AGPL: it runs as
# a separate test server process and is never linked into gdsload.
TOOLS_DIR     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gdsload-tools
MINIO_VERSION := $(shell sed -n 's/^const Version = "\(.*\)"/\1/p' internal/miniotest/minio.go)

.PHONY: all setup build test race fuzz bench lint demo clean gpu-binaries gpu-check-dryrun python wheel python-test minio venv fakecuda

all: build

# A C compiler for cgo; installed with apt-get when missing and run as root.
setup:
	@scripts/setup.sh

# Never link with -z now: go-nvml resolves NVML symbols lazily.
build: setup
	CGO_ENABLED=1 $(GO) build -o $(BIN) ./cmd/gdsload

test: setup lint build python minio venv
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	GDSLOAD_BIN=$(BIN) scripts/python-test.sh

# Installs MinIO unless the binary there is already the pinned version
# (about two minutes of compiling the first time).
minio:
	@if [ -n "$$GDSLOAD_MINIO" ]; then echo "minio: using GDSLOAD_MINIO=$$GDSLOAD_MINIO"; \
	elif $(GO) version -m "$(TOOLS_DIR)/minio" 2>/dev/null | grep -q "mod[[:space:]]*github.com/minio/minio[[:space:]]*$(MINIO_VERSION)"; then \
	  echo "minio $(MINIO_VERSION) in $(TOOLS_DIR)"; \
	else echo "installing github.com/minio/minio@$(MINIO_VERSION) into $(TOOLS_DIR)"; \
	  mkdir -p "$(TOOLS_DIR)" && GOBIN="$(TOOLS_DIR)" GOFLAGS= $(GO) install github.com/minio/minio@$(MINIO_VERSION); fi

# The tests' packages from PyPI (scripts/test-requirements.txt, pinned), in
# a venv over Debian's /usr/bin/python3 that still sees its python3-torch
# and python3-numpy; rebuilt when the list changes.
VENV := build/venv
venv: $(VENV)/.installed
$(VENV)/.installed: scripts/test-requirements.txt
	/usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(VENV)/bin/pip install -q -r scripts/test-requirements.txt
	touch $@

# The CUDA test double under the real libraries' names (libcuda.so.1,
# libcudart.so.13, libcufile.so.0): LD_LIBRARY_PATH=build/fakecuda runs
# the CLI over it, and NVIDIA's real libcufile (GDSLOAD_LIBCUFILE) over its
# driver half (scripts/real-cufile-check.sh).
fakecuda: setup
	$(GO) run ./internal/fakecuda/mkfakecuda build/fakecuda

# The Python package's shared library (capi/, a c-shared build) beside its
# modules: then `pip install ./python` works, or PYTHONPATH=python.
PYLIB := python/gdsload/libgdsload.so
python: setup
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -ldflags='-s -w' -o $(PYLIB) ./capi
	rm -f $(PYLIB:.so=.h)

# A wheel with the library inside, tagged manylinux_2_34 after objdump -T
# showed no newer glibc symbol.
wheel: python
	python3 python/_build/gdsload_build.py dist

# The Python tests alone (Debian's python3-torch and python3-numpy, the
# venv's safetensors and webdataset).
python-test: build python venv
	GDSLOAD_BIN=$(BIN) scripts/python-test.sh

race:
	$(GO) test -race -count=1 $(PKGS)

# Each fuzz target for FUZZTIME, one at a time (go test allows one -fuzz
# target per package run).
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 3x ./loader/
	GDSLOAD=$(BIN) scripts/bench-vs-fio.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@sc=$$(command -v staticcheck || true); \
	 if [ -z "$$sc" ] && $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2 >/dev/null 2>&1; then sc=$$($(GO) env GOPATH)/bin/staticcheck; fi; \
	 if [ -n "$$sc" ]; then echo "staticcheck ./..."; $$sc $(PKGS); else echo "staticcheck not installable here; skipped"; fi

demo: build
	scripts/demo.sh $(BIN) $(DEMO_DIR)

# Binaries for the GPU machine (no Go there): carried in .gpu/. The build
# records the git revision, which gpu-check.sh prints. The device tool
# carries at most 64 MiB: the binaries and the Python package (library
# included, in .gpu/python) must stay under GPU_CARRY_MIB, which leaves
# the working tree room: 39 MiB with the AWS SDK the s3:// support links
# into all three (32 MiB before).
GPU_CARRY_MIB ?= 48
gpu-binaries: python
	mkdir -p .gpu
	CGO_ENABLED=1 $(GO) build -buildvcs=auto -ldflags='-s -w' -o .gpu/gdsload ./cmd/gdsload
	CGO_ENABLED=1 $(GO) test -c -ldflags='-s -w' -o .gpu/checkpoint.test ./shards/checkpoint
	CGO_ENABLED=1 $(GO) test -c -ldflags='-s -w' -o .gpu/rdmafs.test ./rdmafs
	rm -rf .gpu/python && mkdir -p .gpu/python && cp -r python/gdsload .gpu/python/ && rm -rf .gpu/python/gdsload/__pycache__
	@kib=$$(du -ck .gpu/gdsload .gpu/checkpoint.test .gpu/rdmafs.test .gpu/python | tail -1 | cut -f1); \
	 echo "gpu-binaries: $$((kib / 1024)) MiB (limit $(GPU_CARRY_MIB) MiB)"; \
	 if [ "$$kib" -gt $$(($(GPU_CARRY_MIB) * 1024)) ]; then echo "gpu-binaries: over $(GPU_CARRY_MIB) MiB" >&2; exit 1; fi

# gpu-check.sh run here against the CUDA test double, once with cuFile
# usable and once as Debian's libcufile behaves without a driver (its
# PyTorch steps fail here, as they must).
gpu-check-dryrun: gpu-binaries
	scripts/gpu-check-dryrun.sh

clean:
	rm -rf bin .gpu $(DEMO_DIR) dist $(PYLIB)
