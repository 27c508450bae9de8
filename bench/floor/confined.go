//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/exec/sandbox"
)

// confined is the confined floor's state: the base layer, built once,
// and the run cgroups.
type confined struct {
	abi  int
	base int // the base ruleset
	cg   *cgroups
}

// newConfined builds the base layer for the BaseSpec (JSON) in file and
// finds the cgroups; describe says what it did.
func newConfined(file string) (c *confined, describe string, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, "", err
	}
	var bs sandbox.BaseSpec
	if err := json.Unmarshal(data, &bs); err != nil {
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	c = &confined{}
	if c.abi, err = abi(); err != nil {
		return nil, "", err
	}
	if filter == nil {
		return nil, "", fmt.Errorf("seccomp: no filter for %s", runtime.GOARCH)
	}
	start := time.Now()
	var rules int
	if c.base, rules, err = baseRuleset(c.abi, bs); err != nil {
		return nil, "", err
	}
	took := time.Since(start)
	if c.cg, err = newCgroups(); err != nil {
		return nil, "", err
	}
	describe = fmt.Sprintf("Landlock ABI %d; base layer %d rules, built in %.1f ms (%d hidden, %d closed, %d open); cgroup %s",
		c.abi, rules, float64(took)/float64(time.Millisecond), len(bs.Hidden), len(bs.Closed), len(bs.Open), c.cg.describe())
	return c, describe, nil
}

// run runs `/bin/bash -c command` in dir under a pty: a cgroup of its
// own, and from a fresh locked thread that joins it, sets no_new_privs,
// restricts itself with the base layer and a layer of the run's own
// (writes under dir and /dev), installs the seccomp filter, starts bash
// and ends.
func (c *confined) run(command, dir string) (int, error) {
	g, err := c.cg.get()
	if err != nil {
		return -1, err
	}
	defer c.cg.put(g)
	ptmx, tty, err := pty.Open()
	if err != nil {
		return -1, err
	}
	defer ptmx.Close()
	cmd := exec.Command("/bin/bash", "-c", command)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if g.v2fd >= 0 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, g.v2fd
	}
	handled := handledFS(c.abi) &^ readRights
	layer, err := ruleset(c.abi, handled, true)
	if err != nil {
		tty.Close()
		return -1, err
	}
	err = allow(layer, dir, fixed(writeRights&handled), nil)
	if err == nil {
		err = allow(layer, "/dev", fixed((writeRights|unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)&handled), nil)
	}
	if err == nil {
		err = onOwnThread(func() error {
			leave, err := c.cg.enter(g)
			if err != nil {
				return err
			}
			defer leave()
			if err := confineThread(c.base, layer); err != nil {
				return err
			}
			return cmd.Start()
		})
	}
	unix.Close(layer)
	tty.Close()
	if err != nil {
		return -1, err
	}
	_, _ = io.Copy(io.Discard, ptmx) // ends with EIO once the last holder of the tty closes it
	return exitCode(cmd.Wait())
}

func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// wrap is the wrapper floor: this process confines a locked thread (no
// ruleset cached, nothing carved: one Landlock ruleset reading
// everywhere and writing root and /dev; the seccomp filter), starts
// argv from it, waits and exits with its status.
func wrap(root string, argv []string) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("wrap: no command")
	}
	v, err := abi()
	if err != nil {
		return 0, err
	}
	handled := handledFS(v)
	fd, err := ruleset(v, handled, true)
	if err != nil {
		return 0, err
	}
	for _, r := range []struct {
		path   string
		access uint64
	}{
		{"/", readRights},
		{root, readRights | writeRights},
		{"/dev", writeRights | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV},
	} {
		if err := allow(fd, r.path, fixed(r.access&handled), nil); err != nil {
			return 0, err
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	runtime.LockOSThread()
	if err := confineThread(fd); err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return exitCode(cmd.Wait())
}

// churn creates and removes file every period, until killed.
func churn(file string, every time.Duration) error {
	for {
		fd, err := unix.Open(file, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("churn: %w", err)
		}
		unix.Close(fd)
		if err := unix.Unlink(file); err != nil {
			return fmt.Errorf("churn: %w", err)
		}
		time.Sleep(every)
	}
}
