// walker.cpp: BipedalWalker-v3's world on Box2D 2.3's C++ core (the core
// that pybox2d 2.3.10 wraps), built from a setup file that fedirl's Go port
// writes (terrain, obstacles, initial push, actions). It prints the
// observation and hull state after every step, to locate where the Go
// engine (float64) and the C++ one (float32) part, and times the steps.
// It is fedirl's own transcription of the walker's world, for debugging and
// for benchmarking; see run.sh.
//
// Input (whitespace-separated): gravity friction motors_torque leg_length hull_density
//   n_obstacles, then 8 numbers per obstacle (4 vertices);
//   n_points, then x y per terrain point; push_x;
//   n_actions, then 4 numbers per action; repeats (times to replay, for timing).
// Output: one line per step: "obs" 24 values, "hull" 6 values, reward,
// terminated; last line "cpu_ns_per_step" value (process CPU time) and the steps timed.
#include <Box2D/Box2D.h>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <vector>

static const double FPS = 50, SCALE = 30.0;

struct Walker;

struct Listener : b2ContactListener {
  Walker* w;
  void BeginContact(b2Contact* c) override;
  void EndContact(b2Contact* c) override;
};

struct Lidar : b2RayCastCallback {
  float32 fraction = 1;
  float32 ReportFixture(b2Fixture* f, const b2Vec2& point, const b2Vec2&, float32 fr) override {
    if ((f->GetFilterData().categoryBits & 1) == 0) return -1;
    fraction = fr;
    return fr;
  }
};

struct Walker {
  b2World* world = nullptr;
  b2Body* hull = nullptr;
  b2Body* legs[4];
  b2RevoluteJoint* joints[4];
  bool ground[4] = {false, false, false, false};
  bool fall = false;
  Listener listener;
  double prev = 0;
  bool hasPrev = false;
  double torqueMax = 80, grassEnd = 0;

  b2Body* limb(double x, double y, double angle, double hw, double hh) {
    b2BodyDef bd;
    bd.type = b2_dynamicBody;
    bd.position.Set((float32)x, (float32)y);
    bd.angle = (float32)angle;
    b2Body* b = world->CreateBody(&bd);
    b2PolygonShape box;
    box.SetAsBox((float32)hw, (float32)hh);
    b2FixtureDef fd;
    fd.shape = &box;
    fd.density = 1.0f;
    fd.restitution = 0;
    fd.filter.categoryBits = 0x0020;
    fd.filter.maskBits = 0x001;
    b->CreateFixture(&fd);
    return b;
  }

  b2RevoluteJoint* joint(b2Body* a, b2Body* b, double ax, double ay, double bx, double by, double speed, double lo, double hi) {
    b2RevoluteJointDef rjd;
    rjd.bodyA = a;
    rjd.bodyB = b;
    rjd.localAnchorA.Set((float32)ax, (float32)ay);
    rjd.localAnchorB.Set((float32)bx, (float32)by);
    rjd.enableMotor = true;
    rjd.enableLimit = true;
    rjd.maxMotorTorque = (float32)torqueMax;
    rjd.motorSpeed = (float32)speed;
    rjd.lowerAngle = (float32)lo;
    rjd.upperAngle = (float32)hi;
    rjd.referenceAngle = (float32)((double)b->GetAngle() - (double)a->GetAngle());
    return (b2RevoluteJoint*)world->CreateJoint(&rjd);
  }

  void build(double gravity, double friction, double torque, double legLength, double density,
             const std::vector<double>& obst, const std::vector<double>& pts, double push) {
    torqueMax = torque;
    world = new b2World(b2Vec2(0, (float32)gravity));
    listener.w = this;
    world->SetContactListener(&listener);
    for (size_t k = 0; k + 8 <= obst.size(); k += 8) {
      b2BodyDef bd;
      b2Body* b = world->CreateBody(&bd);
      b2Vec2 v[4];
      for (int i = 0; i < 4; i++) v[i].Set((float32)obst[k + 2 * i], (float32)obst[k + 2 * i + 1]);
      b2PolygonShape s;
      s.Set(v, 4);
      b2FixtureDef fd;
      fd.shape = &s;
      fd.friction = (float32)friction;
      b->CreateFixture(&fd);
    }
    size_t n = pts.size() / 2;
    for (size_t i = 0; i + 1 < n; i++) {
      b2BodyDef bd;
      b2Body* b = world->CreateBody(&bd);
      b2EdgeShape e;
      e.Set(b2Vec2((float32)pts[2 * i], (float32)pts[2 * i + 1]), b2Vec2((float32)pts[2 * i + 2], (float32)pts[2 * i + 3]));
      b2FixtureDef fd;
      fd.shape = &e;
      fd.friction = (float32)friction;
      fd.filter.categoryBits = 0x0001;
      b->CreateFixture(&fd);
    }
    double step = 14 / SCALE;
    grassEnd = (200 - 10) * step;
    double legH = legLength / SCALE, legW = 8 / SCALE, legDown = -8 / SCALE;
    double initX = step * 20 / 2, initY = 400 / SCALE / 4 + 2 * legH;
    b2BodyDef bd;
    bd.type = b2_dynamicBody;
    bd.position.Set((float32)initX, (float32)initY);
    hull = world->CreateBody(&bd);
    const double poly[5][2] = {{-30, +9}, {+6, +9}, {+34, +1}, {+34, -8}, {-30, -8}};
    b2Vec2 v[5];
    for (int i = 0; i < 5; i++) v[i].Set((float32)(poly[i][0] / SCALE), (float32)(poly[i][1] / SCALE));
    b2PolygonShape hs;
    hs.Set(v, 5);
    b2FixtureDef fd;
    fd.shape = &hs;
    fd.density = (float32)density;
    fd.friction = 0.1f;
    fd.restitution = 0;
    fd.filter.categoryBits = 0x0020;
    fd.filter.maskBits = 0x001;
    hull->CreateFixture(&fd);
    hull->ApplyForceToCenter(b2Vec2((float32)push, 0), true);
    for (int k = 0; k < 2; k++) {
      double i = k == 0 ? -1 : 1;
      b2Body* thigh = limb(initX, initY - legH / 2 - legDown, i * 0.05, legW / 2, legH / 2);
      joints[2 * k] = joint(hull, thigh, 0, legDown, 0, legH / 2, i, -0.8, 1.1);
      b2Body* shin = limb(initX, initY - legH * 3 / 2 - legDown, i * 0.05, 0.8 * legW / 2, legH / 2);
      joints[2 * k + 1] = joint(thigh, shin, 0, -legH / 2, 0, legH / 2, 1, -1.6, -0.1);
      legs[2 * k] = thigh;
      legs[2 * k + 1] = shin;
    }
  }

  // step returns the reward and writes obs (24) and hull (6).
  double step(const double a[4], double obs[24], double hs[6], bool* term) {
    const double speeds[4] = {4, 6, 4, 6};
    for (int k = 0; k < 4; k++) {
      double s = a[k] > 0 ? 1 : (a[k] < 0 ? -1 : 0);
      joints[k]->SetMotorSpeed((float32)(speeds[k] * s));
      joints[k]->SetMaxMotorTorque((float32)(torqueMax * std::fmin(1.0, std::fmax(0.0, std::fabs(a[k])))));
    }
    world->Step((float32)(1.0 / FPS), 6 * 30, 2 * 30);
    b2Vec2 pos = hull->GetPosition(), vel = hull->GetLinearVelocity();
    for (int i = 0; i < 10; i++) {
      Lidar l;
      double r = 160 / SCALE, ang = 1.5 * i / 10.0;
      b2Vec2 p2((float32)(pos.x + std::sin(ang) * r), (float32)(pos.y - std::cos(ang) * r));
      world->RayCast(&l, pos, p2);
      obs[14 + i] = l.fraction;
    }
    obs[0] = hull->GetAngle();
    obs[1] = 2.0 * hull->GetAngularVelocity() / FPS;
    obs[2] = 0.3 * vel.x * (600 / SCALE) / FPS;
    obs[3] = 0.3 * vel.y * (400 / SCALE) / FPS;
    for (int k = 0; k < 2; k++) {
      int b = 4 + 5 * k;
      obs[b] = joints[2 * k]->GetJointAngle();
      obs[b + 1] = joints[2 * k]->GetJointSpeed() / 4.0;
      obs[b + 2] = joints[2 * k + 1]->GetJointAngle() + 1.0;
      obs[b + 3] = joints[2 * k + 1]->GetJointSpeed() / 6.0;
      obs[b + 4] = ground[2 * k + 1] ? 1 : 0;
    }
    for (int i = 0; i < 24; i++) obs[i] = (double)(float32)obs[i];
    hs[0] = pos.x; hs[1] = pos.y; hs[2] = hull->GetAngle(); hs[3] = vel.x; hs[4] = vel.y; hs[5] = hull->GetAngularVelocity();
    double shaping = 130 * (double)pos.x / SCALE;
    shaping -= 5.0 * std::fabs((double)hull->GetAngle());
    double reward = hasPrev ? shaping - prev : 0;
    prev = shaping;
    hasPrev = true;
    const double cost = 0.00035 * 80;
    for (int k = 0; k < 4; k++) reward -= cost * std::fmin(1.0, std::fmax(0.0, std::fabs(a[k])));
    *term = false;
    if (fall || pos.x < 0) { reward = -100; *term = true; }
    if (pos.x > grassEnd) *term = true;
    return reward;
  }
};

void Listener::BeginContact(b2Contact* c) {
  b2Body* a = c->GetFixtureA()->GetBody();
  b2Body* b = c->GetFixtureB()->GetBody();
  if (a == w->hull || b == w->hull) w->fall = true;
  for (int i : {1, 3})
    if (w->legs[i] == a || w->legs[i] == b) w->ground[i] = true;
}

void Listener::EndContact(b2Contact* c) {
  b2Body* a = c->GetFixtureA()->GetBody();
  b2Body* b = c->GetFixtureB()->GetBody();
  for (int i : {1, 3})
    if (w->legs[i] == a || w->legs[i] == b) w->ground[i] = false;
}

int main() {
  double g, fr, tq, ll, dens;
  if (scanf("%lf %lf %lf %lf %lf", &g, &fr, &tq, &ll, &dens) != 5) return 1;
  int n;
  if (scanf("%d", &n) != 1) return 1;
  std::vector<double> obst(8 * n);
  for (auto& x : obst) if (scanf("%lf", &x) != 1) return 1;
  if (scanf("%d", &n) != 1) return 1;
  std::vector<double> pts(2 * n);
  for (auto& x : pts) if (scanf("%lf", &x) != 1) return 1;
  double push;
  if (scanf("%lf", &push) != 1) return 1;
  if (scanf("%d", &n) != 1) return 1;
  std::vector<double> acts(4 * n);
  for (auto& x : acts) if (scanf("%lf", &x) != 1) return 1;
  int repeats = 1;
  if (scanf("%d", &repeats) != 1) repeats = 1;
  double obs[24], hs[6];
  long steps = 0;
  double ns = 0;
  for (int rep = 0; rep < repeats; rep++) {
    Walker w;
    w.build(g, fr, tq, ll, dens, obst, pts, push);
    const double zero[4] = {0, 0, 0, 0};
    bool term;
    w.step(zero, obs, hs, &term);
    if (rep == 0) {
      printf("0 obs");
      for (double v : obs) printf(" %.9g", v);
      printf(" hull");
      for (double v : hs) printf(" %.9g", v);
      printf("\n");
    }
    timespec c0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    for (int t = 0; t < n; t++) {
      double r = w.step(&acts[4 * t], obs, hs, &term);
      steps++;
      if (rep == 0) {
        printf("%d obs", t + 1);
        for (double v : obs) printf(" %.9g", v);
        printf(" hull");
        for (double v : hs) printf(" %.9g", v);
        printf(" reward %.17g term %d\n", r, term ? 1 : 0);
      }
      if (term) break;
    }
    timespec c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    ns += (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec);
    delete w.world;
  }
  printf("cpu_ns_per_step %.1f steps %ld\n", ns / steps, steps);
  return 0;
}
