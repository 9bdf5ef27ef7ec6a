// Package gpurent holds the domain of a GPU rental cloud: the nouns every other
// package shares (GPU types, zones, hosts, GPUs, accounts, instances,
// allocations, volumes, events), the closed set of error codes, and the storage
// contract that the SQLite and PostgreSQL adapters fulfil.
//
// It imports nothing beyond the standard library and knows no database, HTTP
// or container runtime. Domain logic lives in internal/<domain> packages;
// adapters live at the edges; internal/app wires them together.
package gpurent
