//go:build !linux

package window

func threadCPU() (int64, bool) { return 0, false }
