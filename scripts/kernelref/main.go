// Command kernelref regenerates kboost's golden tables from a Linux source tree,
// using the kernel's own x86 decoder and kprobes code (see internal/kernelref).
//
//	go run ./scripts/kernelref [-o boost/testdata/linux-6.1.golden] [-source TARBALL]
//	go run ./scripts/kernelref -uprobes [-o boost/testdata/uprobes-x86.golden]
//	go run ./scripts/kernelref -uprobes-host [-o boost/testdata/uprobes-x86-host.golden]  (root)
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kboost/kboost/internal/kernelref"
)

func main() {
	out := flag.String("o", "", "output file (- for stdout; default boost/testdata/linux-6.1.golden or uprobes-x86.golden)")
	src := flag.String("source", "", "kernel source tarball (default $KBOOST_LINUX_SOURCE or "+kernelref.DefaultTarball+")")
	uprobes := flag.Bool("uprobes", false, "write the uprobes table instead of the kprobes one")
	host := flag.Bool("uprobes-host", false, "probe the running kernel's uprobes with the rows of boost/testdata/uprobes-x86.golden (root)")
	flag.Parse()
	if *host {
		if *out == "" {
			*out = "boost/testdata/uprobes-x86-host.golden"
		}
		if err := runHost(*out); err != nil {
			fmt.Fprintln(os.Stderr, "kernelref:", err)
			os.Exit(1)
		}
		return
	}
	if *out == "" {
		*out = "boost/testdata/linux-6.1.golden"
		if *uprobes {
			*out = "boost/testdata/uprobes-x86.golden"
		}
	}
	if err := run(*out, *src, *uprobes); err != nil {
		fmt.Fprintln(os.Stderr, "kernelref:", err)
		os.Exit(1)
	}
}

func run(out, src string, uprobes bool) error {
	o, err := kernelref.Open(kernelref.Options{Tarball: src})
	if err != nil {
		return err
	}
	defer o.Close()
	w := os.Stdout
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	write := o.WriteTable
	if uprobes {
		write = o.WriteUprobeTable
	}
	if err := write(w); err != nil {
		return err
	}
	if out != "-" {
		return w.Close()
	}
	return nil
}

func runHost(out string) error {
	f, err := os.Open("boost/testdata/uprobes-x86.golden")
	if err != nil {
		return err
	}
	t, err := kernelref.ReadTable(f)
	f.Close()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kboost-uprobes")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := kernelref.WriteHostUprobeTable(w, t, dir); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
