package vm

import "testing"

func TestDebFileArch(t *testing.T) {
	for deb, want := range map[string]*Arch{
		"/c/linux-image-6.12.117+deb12-arm64_6.12.117-1~deb12u1_arm64.deb": ARM64,
		"linux-binary-7.2.13+deb14-amd64_7.2.13-1_amd64.deb":               AMD64,
		"linux-image-6.1.0-57-686_6.1.192-3_i386.deb":                      I386,
		"linux-image-6.1.0-57-armmp_6.1.192-3_armhf.deb":                   ARM,
		"kernel.deb": nil,
	} {
		if got := debFileArch(deb); got != want {
			t.Errorf("debFileArch(%q) = %v, want %v", deb, got, want)
		}
	}
}
