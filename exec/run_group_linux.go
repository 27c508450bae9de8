package exec

import (
	"bytes"
	"os"
	"strconv"
)

// groupAlive reports whether any live (not zombie) process has process
// group pgid. kill(-pgid, 0) is not enough: it succeeds while zombies of the
// group wait to be reaped, and a container's init may never reap them.
func groupAlive(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return killZeroAlive(pgid)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return killZeroAlive(pgid)
	}
	var buf [512]byte
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		if procInGroup("/proc/"+name+"/stat", pgid, buf[:]) {
			return true
		}
	}
	return false
}

// procInGroup reads a /proc/<pid>/stat ("pid (comm) state ppid pgrp ...")
// and reports whether the process is alive and in group pgid.
func procInGroup(path string, pgid int, buf []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	n, _ := f.Read(buf)
	_ = f.Close()
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 3 {
		return false
	}
	if s := fields[0]; len(s) == 1 && (s[0] == 'Z' || s[0] == 'X') {
		return false
	}
	g, err := strconv.Atoi(string(fields[2]))
	return err == nil && g == pgid
}
