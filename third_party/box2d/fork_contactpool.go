package box2d

// fedirl fork: contact pooling. Box2D C++ allocates contacts from a block
// allocator that reuses the memory of destroyed ones; the Go port
// allocated four objects (the contact, its manifold and two edges) for
// every new contact. Each contact manager now keeps its destroyed contacts
// by fixture types and re-initialises one, manifold and edges included,
// exactly as the factory would make it.

// initializingRegisters is true while B2ContactInitializeRegisters runs;
// customRegisters records an AddType call from elsewhere, after which
// contacts are no longer pooled (the user's create function must run).
var initializingRegisters, customRegisters bool

// create is B2ContactFactory, reusing a pooled contact when there is one.
func (mgr *B2ContactManager) create(fixtureA *B2Fixture, indexA int, fixtureB *B2Fixture, indexB int) B2ContactInterface {
	registersOnce.Do(func() {
		B2ContactInitializeRegisters()
		s_initialized = true
	})
	type1, type2 := fixtureA.GetType(), fixtureB.GetType()
	reg := &s_registers[type1][type2]
	if reg.CreateFcn == nil || customRegisters {
		return B2ContactFactory(fixtureA, indexA, fixtureB, indexB)
	}
	if !reg.Primary {
		fixtureA, indexA, fixtureB, indexB = fixtureB, indexB, fixtureA, indexA
		type1, type2 = type2, type1
	}
	pool := &mgr.pool[type1][type2]
	n := len(*pool)
	if n == 0 {
		return reg.CreateFcn(fixtureA, indexA, fixtureB, indexB)
	}
	c := (*pool)[n-1]
	(*pool)[n-1] = nil
	*pool = (*pool)[:n-1]
	// The child indices as each type's create function passes them.
	switch c := c.(type) {
	case *B2ChainAndCircleContact:
		c.reuse(fixtureA, indexA, fixtureB, indexB)
	case *B2ChainAndPolygonContact:
		c.reuse(fixtureA, indexA, fixtureB, indexB)
	case *B2CircleContact:
		c.reuse(fixtureA, 0, fixtureB, 0)
	case *B2EdgeAndCircleContact:
		c.reuse(fixtureA, 0, fixtureB, 0)
	case *B2EdgeAndPolygonContact:
		c.reuse(fixtureA, 0, fixtureB, 0)
	case *B2PolygonContact:
		c.reuse(fixtureA, 0, fixtureB, 0)
	case *B2PolygonAndCircleContact:
		c.reuse(fixtureA, 0, fixtureB, 0)
	default:
		panic("box2d: unknown contact type in the pool")
	}
	return c
}

// reuse re-initialises a pooled contact as MakeB2Contact would.
func (contact *B2Contact) reuse(fA *B2Fixture, indexA int, fB *B2Fixture, indexB int) {
	contact.init(fA, indexA, fB, indexB, contact.M_manifold, contact.M_nodeA, contact.M_nodeB)
}

// recycle keeps a destroyed contact of a built-in type for reuse, with its
// references to fixtures, bodies and other contacts dropped.
func (mgr *B2ContactManager) recycle(c B2ContactInterface) {
	var base *B2Contact
	switch c := c.(type) {
	case *B2ChainAndCircleContact:
		base = &c.B2Contact
	case *B2ChainAndPolygonContact:
		base = &c.B2Contact
	case *B2CircleContact:
		base = &c.B2Contact
	case *B2EdgeAndCircleContact:
		base = &c.B2Contact
	case *B2EdgeAndPolygonContact:
		base = &c.B2Contact
	case *B2PolygonContact:
		base = &c.B2Contact
	case *B2PolygonAndCircleContact:
		base = &c.B2Contact
	default:
		return
	}
	type1, type2 := base.M_fixtureA.GetType(), base.M_fixtureB.GetType()
	if customRegisters || int(type1) >= len(mgr.pool) || int(type2) >= len(mgr.pool[type1]) {
		return
	}
	*base.M_nodeA = B2ContactEdge{}
	*base.M_nodeB = B2ContactEdge{}
	base.M_prev, base.M_next, base.M_fixtureA, base.M_fixtureB = nil, nil, nil, nil
	mgr.pool[type1][type2] = append(mgr.pool[type1][type2], c)
}
