//go:build !unix

package adapter_test

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }
