package audit

import (
	"testing"

	"github.com/kboost/kboost/boost"
)

// TestRuleA64AlternativeRegistered: the reason the audit attaches names a
// rule that `kboost policies --rules` lists.
func TestRuleA64AlternativeRegistered(t *testing.T) {
	if _, ok := boost.RuleByID(RuleA64Alternative); !ok {
		t.Fatalf("rule %s is not in boost's rule table", RuleA64Alternative)
	}
}
