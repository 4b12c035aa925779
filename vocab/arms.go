package vocab

// Arm and content-type names the packages fill in or fold into.
const (
	// DefaultArm is the arm of an event that names none, on a subject
	// that names none.
	DefaultArm = "live"
	// DefaultType is the content type of a gold item that names none
	// (SPEC §2.1).
	DefaultType = "prose"
	// Other is where arms and content types beyond their cardinality caps
	// are folded, so a flood of made-up names cannot blow up label
	// cardinality.
	Other = "_other"
)
