//go:build !unix

package config

const openNonBlocking = 0
