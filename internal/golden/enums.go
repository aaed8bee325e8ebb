package golden

import (
	"fmt"
	"reflect"
	"sync"
)

// A pool of named string types standing in for Python Enum classes. Go cannot
// create named types with methods at run time, so each golden Enum takes a
// slot whose EnumValues reads the slot's values; its DSPy name is given
// through signature.WithTypes.

const enumSlots = 32

var enumPool = struct {
	sync.Mutex
	slots  map[string]int // "Name(values)" → slot
	values [enumSlots][]string
}{slots: map[string]int{}}

func slotValues(i int) []string {
	enumPool.Lock()
	defer enumPool.Unlock()
	return append([]string(nil), enumPool.values[i]...)
}

type enum0 string

func (enum0) EnumValues() []string { return slotValues(0) }

type enum1 string

func (enum1) EnumValues() []string { return slotValues(1) }

type enum2 string

func (enum2) EnumValues() []string { return slotValues(2) }

type enum3 string

func (enum3) EnumValues() []string { return slotValues(3) }

type enum4 string

func (enum4) EnumValues() []string { return slotValues(4) }

type enum5 string

func (enum5) EnumValues() []string { return slotValues(5) }

type enum6 string

func (enum6) EnumValues() []string { return slotValues(6) }

type enum7 string

func (enum7) EnumValues() []string { return slotValues(7) }

type enum8 string

func (enum8) EnumValues() []string { return slotValues(8) }

type enum9 string

func (enum9) EnumValues() []string { return slotValues(9) }

type enum10 string

func (enum10) EnumValues() []string { return slotValues(10) }

type enum11 string

func (enum11) EnumValues() []string { return slotValues(11) }

type enum12 string

func (enum12) EnumValues() []string { return slotValues(12) }

type enum13 string

func (enum13) EnumValues() []string { return slotValues(13) }

type enum14 string

func (enum14) EnumValues() []string { return slotValues(14) }

type enum15 string

func (enum15) EnumValues() []string { return slotValues(15) }

type enum16 string

func (enum16) EnumValues() []string { return slotValues(16) }

type enum17 string

func (enum17) EnumValues() []string { return slotValues(17) }

type enum18 string

func (enum18) EnumValues() []string { return slotValues(18) }

type enum19 string

func (enum19) EnumValues() []string { return slotValues(19) }

type enum20 string

func (enum20) EnumValues() []string { return slotValues(20) }

type enum21 string

func (enum21) EnumValues() []string { return slotValues(21) }

type enum22 string

func (enum22) EnumValues() []string { return slotValues(22) }

type enum23 string

func (enum23) EnumValues() []string { return slotValues(23) }

type enum24 string

func (enum24) EnumValues() []string { return slotValues(24) }

type enum25 string

func (enum25) EnumValues() []string { return slotValues(25) }

type enum26 string

func (enum26) EnumValues() []string { return slotValues(26) }

type enum27 string

func (enum27) EnumValues() []string { return slotValues(27) }

type enum28 string

func (enum28) EnumValues() []string { return slotValues(28) }

type enum29 string

func (enum29) EnumValues() []string { return slotValues(29) }

type enum30 string

func (enum30) EnumValues() []string { return slotValues(30) }

type enum31 string

func (enum31) EnumValues() []string { return slotValues(31) }

var enumTypes = [enumSlots]reflect.Type{
	reflect.TypeFor[enum0](),
	reflect.TypeFor[enum1](),
	reflect.TypeFor[enum2](),
	reflect.TypeFor[enum3](),
	reflect.TypeFor[enum4](),
	reflect.TypeFor[enum5](),
	reflect.TypeFor[enum6](),
	reflect.TypeFor[enum7](),
	reflect.TypeFor[enum8](),
	reflect.TypeFor[enum9](),
	reflect.TypeFor[enum10](),
	reflect.TypeFor[enum11](),
	reflect.TypeFor[enum12](),
	reflect.TypeFor[enum13](),
	reflect.TypeFor[enum14](),
	reflect.TypeFor[enum15](),
	reflect.TypeFor[enum16](),
	reflect.TypeFor[enum17](),
	reflect.TypeFor[enum18](),
	reflect.TypeFor[enum19](),
	reflect.TypeFor[enum20](),
	reflect.TypeFor[enum21](),
	reflect.TypeFor[enum22](),
	reflect.TypeFor[enum23](),
	reflect.TypeFor[enum24](),
	reflect.TypeFor[enum25](),
	reflect.TypeFor[enum26](),
	reflect.TypeFor[enum27](),
	reflect.TypeFor[enum28](),
	reflect.TypeFor[enum29](),
	reflect.TypeFor[enum30](),
	reflect.TypeFor[enum31](),
}

// enumType returns the pooled type for an enum definition; the same
// definition always gets the same type.
func enumType(name string, members [][2]string) (reflect.Type, error) {
	key := fmt.Sprint(name, members)
	enumPool.Lock()
	defer enumPool.Unlock()
	if i, ok := enumPool.slots[key]; ok {
		return enumTypes[i], nil
	}
	i := len(enumPool.slots)
	if i >= enumSlots {
		return nil, fmt.Errorf("golden: more than %d distinct enums", enumSlots)
	}
	vals := make([]string, len(members))
	for j, m := range members {
		vals[j] = m[1]
	}
	enumPool.slots[key] = i
	enumPool.values[i] = vals
	return enumTypes[i], nil
}
