"""pybox2d_walker.py: time BipedalWalker-v3's step on pybox2d (the engine Gymnasium uses).

Usage: PYTHONPATH=<pybox2d build/lib...> python3 pybox2d_walker.py SETUP [REPEATS]
       PYTHONPATH=... python3 pybox2d_walker.py --record SETUP... > golden.json

SETUP is a file written by fedirl's Go port (pkg/envs/bipedal, TestWriteCppSetups;
the format is in walker.cpp). This script is fedirl's own transcription of the
walker's world on pybox2d's API: the same bodies, joints, motors and lidar as
Gymnasium's BipedalWalker step (set four motors, world.Step(1/50, 180, 60), ten
ray casts, the 24-value state and the reward), without numpy or Gymnasium, so its
per-step time is pybox2d's cost of a Gymnasium step minus Gymnasium's wrappers.
It prints the process CPU time per step (ns) and the steps timed.
"""
import math
import sys
import time

import Box2D
from Box2D.b2 import contactListener, edgeShape, fixtureDef, polygonShape, revoluteJointDef

SCALE, FPS = 30.0, 50


def read(path):
    with open(path) as f:
        tok = f.read().split()
    it = iter(tok)
    g, fr, tq, ll, dens = (float(next(it)) for _ in range(5))
    obst = [[(float(next(it)), float(next(it))) for _ in range(4)] for _ in range(int(next(it)))]
    pts = [(float(next(it)), float(next(it))) for _ in range(int(next(it)))]
    push = float(next(it))
    acts = [[float(next(it)) for _ in range(4)] for _ in range(int(next(it)))]
    return g, fr, tq, ll, dens, obst, pts, push, acts


class Contacts(contactListener):
    def __init__(self, w):
        contactListener.__init__(self)
        self.w = w

    def BeginContact(self, c):
        a, b = c.fixtureA.body, c.fixtureB.body
        if self.w.hull in (a, b):
            self.w.fall = True
        for i in (1, 3):
            if self.w.legs[i] in (a, b):
                self.w.ground[i] = True

    def EndContact(self, c):
        a, b = c.fixtureA.body, c.fixtureB.body
        for i in (1, 3):
            if self.w.legs[i] in (a, b):
                self.w.ground[i] = False


class Lidar(Box2D.b2.rayCastCallback):
    def ReportFixture(self, fixture, point, normal, fraction):
        if (fixture.filterData.categoryBits & 1) == 0:
            return -1
        self.fraction = fraction
        return fraction


class Walker:
    def __init__(self, g, fr, tq, ll, dens, obst, pts, push):
        self.world = Box2D.b2World(gravity=(0, g))
        self.fall, self.ground, self.tq = False, [False] * 4, tq
        self.legs = [None] * 4
        self.hull = None
        self.world.contactListener_keep = Contacts(self)
        self.world.contactListener = self.world.contactListener_keep
        for poly in obst:
            self.world.CreateStaticBody(fixtures=fixtureDef(shape=polygonShape(vertices=poly), friction=fr))
        for i in range(len(pts) - 1):
            self.world.CreateStaticBody(fixtures=fixtureDef(shape=edgeShape(vertices=[pts[i], pts[i + 1]]), friction=fr, categoryBits=0x0001))
        step = 14 / SCALE
        self.end = (200 - 10) * step
        leg_h, leg_w, leg_down = ll / SCALE, 8 / SCALE, -8 / SCALE
        x, y = step * 20 / 2, 400 / SCALE / 4 + 2 * leg_h
        hull_poly = [(-30, +9), (+6, +9), (+34, +1), (+34, -8), (-30, -8)]
        self.hull = self.world.CreateDynamicBody(position=(x, y), fixtures=fixtureDef(
            shape=polygonShape(vertices=[(a / SCALE, b / SCALE) for a, b in hull_poly]), density=dens, friction=0.1,
            categoryBits=0x0020, maskBits=0x001, restitution=0.0))
        self.hull.ApplyForceToCenter((push, 0), True)
        self.joints = []
        for k, i in enumerate([-1, +1]):
            thigh = self.world.CreateDynamicBody(position=(x, y - leg_h / 2 - leg_down), angle=i * 0.05, fixtures=fixtureDef(
                shape=polygonShape(box=(leg_w / 2, leg_h / 2)), density=1.0, restitution=0.0, categoryBits=0x0020, maskBits=0x001))
            self.joints.append(self.world.CreateJoint(revoluteJointDef(bodyA=self.hull, bodyB=thigh, localAnchorA=(0, leg_down),
                localAnchorB=(0, leg_h / 2), enableMotor=True, enableLimit=True, maxMotorTorque=tq, motorSpeed=i, lowerAngle=-0.8, upperAngle=1.1)))
            shin = self.world.CreateDynamicBody(position=(x, y - leg_h * 3 / 2 - leg_down), angle=i * 0.05, fixtures=fixtureDef(
                shape=polygonShape(box=(0.8 * leg_w / 2, leg_h / 2)), density=1.0, restitution=0.0, categoryBits=0x0020, maskBits=0x001))
            self.joints.append(self.world.CreateJoint(revoluteJointDef(bodyA=thigh, bodyB=shin, localAnchorA=(0, -leg_h / 2),
                localAnchorB=(0, leg_h / 2), enableMotor=True, enableLimit=True, maxMotorTorque=tq, motorSpeed=1, lowerAngle=-1.6, upperAngle=-0.1)))
            self.legs[2 * k], self.legs[2 * k + 1] = thigh, shin
        self.lidar = [Lidar() for _ in range(10)]
        self.prev = None

    def step(self, a):
        speeds = (4, 6, 4, 6)
        for k in range(4):
            s = (a[k] > 0) - (a[k] < 0)
            self.joints[k].motorSpeed = float(speeds[k] * s)
            self.joints[k].maxMotorTorque = float(self.tq * min(1.0, max(0.0, abs(a[k]))))
        self.world.Step(1.0 / FPS, 6 * 30, 2 * 30)
        pos, vel = self.hull.position, self.hull.linearVelocity
        for i in range(10):
            l = self.lidar[i]
            l.fraction = 1.0
            p2 = (pos[0] + math.sin(1.5 * i / 10.0) * 160 / SCALE, pos[1] - math.cos(1.5 * i / 10.0) * 160 / SCALE)
            self.world.RayCast(l, pos, p2)
        j = self.joints
        state = [self.hull.angle, 2.0 * self.hull.angularVelocity / FPS, 0.3 * vel.x * (600 / SCALE) / FPS,
                 0.3 * vel.y * (400 / SCALE) / FPS,
                 j[0].angle, j[0].speed / 4, j[1].angle + 1.0, j[1].speed / 6, 1.0 if self.ground[1] else 0.0,
                 j[2].angle, j[2].speed / 4, j[3].angle + 1.0, j[3].speed / 6, 1.0 if self.ground[3] else 0.0]
        state += [l.fraction for l in self.lidar]
        shaping = 130 * pos[0] / SCALE - 5.0 * abs(state[0])
        reward = 0 if self.prev is None else shaping - self.prev
        self.prev = shaping
        for x in a:
            reward -= 0.00035 * 80 * min(1.0, max(0.0, abs(x)))
        term = False
        if self.fall or pos[0] < 0:
            reward, term = -100, True
        if pos[0] > self.end:
            term = True
        return state, reward, term


def f32(x):
    import struct
    return struct.unpack("f", struct.pack("f", x))[0]


def record(setup):
    """The observations (as float32, as Gymnasium returns them) and rewards of the setup's episode."""
    g, fr, tq, ll, dens, obst, pts, push, acts = read(setup)
    w = Walker(g, fr, tq, ll, dens, obst, pts, push)
    obs, _, _ = w.step([0, 0, 0, 0])
    steps = [{"obs": [f32(x) for x in obs]}]
    for a in acts:
        obs, r, term = w.step(a)
        steps.append({"obs": [f32(x) for x in obs], "reward": r, "terminated": bool(term)})
        if term:
            break
    return steps


def main():
    if sys.argv[1] == "--record":
        import json
        import os
        out = {os.path.basename(p)[:-4]: record(p) for p in sorted(sys.argv[2:])}
        json.dump({"generated_with": {"pybox2d": Box2D.__version__, "python": sys.version.split()[0]}, "episodes": out},
                  sys.stdout, separators=(",", ":"))
        print()
        return
    g, fr, tq, ll, dens, obst, pts, push, acts = read(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    steps, secs = 0, 0.0
    for _ in range(repeats):
        w = Walker(g, fr, tq, ll, dens, obst, pts, push)
        w.step([0, 0, 0, 0])
        t0 = time.process_time()
        for a in acts:
            _, _, term = w.step(a)
            steps += 1
            if term:
                break
        secs += time.process_time() - t0
    print(f"cpu_ns_per_step {secs / steps * 1e9:.1f} steps {steps} pybox2d {Box2D.__version__}")


if __name__ == "__main__":
    main()
