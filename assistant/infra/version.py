"""The package's version, in one place below every module that reports it (manifests, the HTTP APIs)."""

VERSION = "0.1.0"
