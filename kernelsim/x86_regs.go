package kernelsim

// Regs.GPR indices of the x86 registers the models name (encoding order;
// kernelsim/native's assembler has the full set).
const (
	rAX = 0
	rBX = 3
	rSP = 4
)
