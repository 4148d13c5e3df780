//go:build tools

// Package tools pins etcd in this module graph.
package tools

import _ "go.etcd.io/etcd/server/v3"
