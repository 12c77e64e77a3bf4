package audit

import "testing"

func TestIsMarker(t *testing.T) {
	for name, want := range map[string]bool{
		"_stext": true, "_einittext": true, "__start_mcount_loc": true, "__stop___jump_table": true,
		"__entry_text_end": true, "__kprobes_text_start": true, "__irqentry_text_end": true,
		"vfs_read": false, "__x64_sys_read": false, "do_sys_openat2": false, "__schedule": false,
		"srso_alias_safe_ret": false, "__x86_return_thunk": false,
	} {
		if got := IsMarker(name); got != want {
			t.Errorf("IsMarker(%q) = %v, want %v", name, got, want)
		}
	}
}
