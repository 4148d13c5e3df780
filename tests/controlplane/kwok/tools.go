//go:build tools

// Package tools pins kwok in this module graph.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
