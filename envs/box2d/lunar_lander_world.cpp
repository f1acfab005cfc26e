// One LunarLander world on Box2D 2.4, ported line by line from Gymnasium 1.4.0's
// gymnasium/envs/box2d/lunar_lander.py (reset() and step(); Lnn are lines of that file as the
// gymnasium 1.4.0 wheel on PyPI ships it).
#include "envs/box2d/lunar_lander_world.h"

#include <algorithm>
#include <cmath>

namespace cugym {

using namespace lunar_lander;

namespace {

constexpr double kMainEnginePower = 13.0;
constexpr double kSideEnginePower = 0.6;
constexpr double kMainEngineYLocation = 4.0;  // pixels
constexpr double kSideEngineHeight = 14.0;    // pixels
constexpr double kSideEngineAway = 12.0;      // pixels
constexpr double kLegSpringTorque = 40.0;
constexpr uint16_t kMoonCategory = 0x0001, kLanderCategory = 0x0010, kLegCategory = 0x0020;
// The legs' joint limits (L432-439), radians: legs[0] (i = -1) then legs[1].
constexpr float kLegLimits[2][2] = {{0.4f, 0.9f}, {-0.9f, -0.4f}};
// A limit this far (radians) never acts: 2.4's speculative limit allows (C / dt) rad/s.
constexpr float kNoLimit = 1.0e4f;
// Gymnasium's world.Step(1/50, 180, 60) (L619).
constexpr int kVelocityIterations = 6 * 30, kPositionIterations = 2 * 30;
// Where a leg's joint limit carries load, more velocity iterations (see SetLimitStates).
constexpr int kLimitVelocityIterations = 500;
// L34-55: the lander's outline in pixels.
constexpr double kLanderPoly[6][2] = {{-14, 17}, {-17, 0}, {-17, -10}, {17, -10}, {17, 0}, {14, 17}};

double ChunkX(int i) { return kWorldW / (kChunks - 1) * i; }

// Gymnasium's wind and turbulence profile (L475-507): tanh(sin(0.02 k) + sin(0.01 pi k)).
double WindProfile(int k) { return std::tanh(std::sin(0.02 * k) + std::sin(M_PI * 0.01 * k)); }

void SetBody(b2Body* body, const float* v) {
  body->SetTransform(b2Vec2(v[0], v[1]), v[2]);
  body->SetLinearVelocity(b2Vec2(v[3], v[4]));
  body->SetAngularVelocity(v[5]);
}

void GetBody(const b2Body* body, float* v) {
  v[0] = body->GetPosition().x;
  v[1] = body->GetPosition().y;
  v[2] = body->GetAngle();
  v[3] = body->GetLinearVelocity().x;
  v[4] = body->GetLinearVelocity().y;
  v[5] = body->GetAngularVelocity();
}

}  // namespace

// L58-77: any contact of the lander body ends the game; a leg's flag follows its contacts
// (EndContact clears it even when the leg still touches another edge, as Gymnasium's does).
class LunarLanderWorld::ContactListener final : public b2ContactListener {
 public:
  explicit ContactListener(LunarLanderWorld* world) : world_(world) {}
  void BeginContact(b2Contact* contact) override { Update(contact, true); }
  void EndContact(b2Contact* contact) override { Update(contact, false); }

 private:
  void Update(b2Contact* contact, bool begin) {
    const b2Body* a = contact->GetFixtureA()->GetBody();
    const b2Body* b = contact->GetFixtureB()->GetBody();
    if (begin && (a == world_->lander_ || b == world_->lander_)) world_->game_over_ = true;
    for (int i = 0; i < 2; ++i) {
      if (a == world_->legs_[i] || b == world_->legs_[i]) world_->ground_contact_[i] = begin;
    }
  }
  LunarLanderWorld* world_;
};

LunarLanderWorld::LunarLanderWorld() : listener_(std::make_unique<ContactListener>(this)) {}
LunarLanderWorld::~LunarLanderWorld() = default;

// L343-442 without the random draws: the moon (base edge, 10 terrain edges), the lander and its
// two legs on revolute joints, in Gymnasium's order of creation (it decides Box2D's body and
// contact order, hence the solver's).
void LunarLanderWorld::Build(const LunarLanderParams& params, const double* smooth_y) {
  world_.reset();  // destroys the old bodies without contact callbacks
  world_ = std::make_unique<b2World>(b2Vec2(0.0f, params.gravity));
  world_->SetContactListener(listener_.get());
  std::copy(smooth_y, smooth_y + kChunks, smooth_y_);
  ground_contact_[0] = ground_contact_[1] = false;
  game_over_ = false;
  cold_ = true;
  last_engines_ = {};

  b2BodyDef moon_def;
  b2Body* moon = world_->CreateBody(&moon_def);
  b2EdgeShape base;
  base.SetTwoSided(b2Vec2(0.0f, 0.0f), b2Vec2(static_cast<float>(kWorldW), 0.0f));
  b2FixtureDef base_fixture;  // pybox2d's defaults: friction 0.2, category 1, mask 0xFFFF
  base_fixture.shape = &base;
  moon->CreateFixture(&base_fixture);
  for (int i = 0; i < kChunks - 1; ++i) {
    b2EdgeShape edge;
    edge.SetTwoSided(b2Vec2(static_cast<float>(ChunkX(i)), static_cast<float>(smooth_y[i])),
                     b2Vec2(static_cast<float>(ChunkX(i + 1)), static_cast<float>(smooth_y[i + 1])));
    b2FixtureDef fixture;
    fixture.shape = &edge;
    fixture.density = 0.0f;
    fixture.friction = 0.1f;
    moon->CreateFixture(&fixture);
  }

  const float initial_x = static_cast<float>(kWorldW / 2), initial_y = static_cast<float>(kWorldH);
  b2BodyDef lander_def;
  lander_def.type = b2_dynamicBody;
  lander_def.position.Set(initial_x, initial_y);
  lander_def.angle = 0.0f;
  lander_ = world_->CreateBody(&lander_def);
  b2Vec2 vertices[6];
  for (int k = 0; k < 6; ++k)
    vertices[k].Set(static_cast<float>(kLanderPoly[k][0] / kScale), static_cast<float>(kLanderPoly[k][1] / kScale));
  b2PolygonShape hull;
  hull.Set(vertices, 6);
  b2FixtureDef lander_fixture;
  lander_fixture.shape = &hull;
  lander_fixture.density = 5.0f;
  lander_fixture.friction = 0.1f;
  lander_fixture.restitution = 0.0f;
  lander_fixture.filter.categoryBits = kLanderCategory;
  lander_fixture.filter.maskBits = kMoonCategory;
  lander_->CreateFixture(&lander_fixture);

  for (int k = 0; k < 2; ++k) {
    const int i = k == 0 ? -1 : +1;  // legs[0] is i = -1, on the +x side
    b2BodyDef leg_def;
    leg_def.type = b2_dynamicBody;
    leg_def.position.Set(static_cast<float>(initial_x - i * kLegAway / kScale), initial_y);
    leg_def.angle = static_cast<float>(i * 0.05);
    b2Body* leg = world_->CreateBody(&leg_def);
    b2PolygonShape box;
    box.SetAsBox(static_cast<float>(kLegW / kScale), static_cast<float>(kLegH / kScale));
    b2FixtureDef leg_fixture;  // friction stays at the default 0.2
    leg_fixture.shape = &box;
    leg_fixture.density = 1.0f;
    leg_fixture.restitution = 0.0f;
    leg_fixture.filter.categoryBits = kLegCategory;
    leg_fixture.filter.maskBits = kMoonCategory;
    leg->CreateFixture(&leg_fixture);

    b2RevoluteJointDef joint;
    joint.bodyA = lander_;
    joint.bodyB = leg;
    joint.localAnchorA.Set(0.0f, 0.0f);
    joint.localAnchorB.Set(static_cast<float>(i * kLegAway / kScale), static_cast<float>(kLegDown / kScale));
    // pybox2d's revoluteJointDef sets referenceAngle = bodyB.angle - bodyA.angle (reference §1.3).
    joint.referenceAngle = leg->GetAngle() - lander_->GetAngle();
    joint.enableMotor = true;
    joint.enableLimit = true;
    joint.maxMotorTorque = static_cast<float>(kLegSpringTorque);
    joint.motorSpeed = static_cast<float>(0.3 * i);
    joint.lowerAngle = kLegLimits[k][0];
    joint.upperAngle = kLegLimits[k][1];
    joints_[k] = static_cast<b2RevoluteJoint*>(world_->CreateJoint(&joint));
    legs_[k] = leg;
  }
}

void LunarLanderWorld::Reset(const LunarLanderParams& params, const LunarLanderDraws& draws) {
  // L343-367: heights 3..7 become the helipad's, then a 3-point smoothing with factor 0.33 (so
  // the pad sits at 3.3 m), wrapping height[-1] to height[11].
  std::array<double, kChunks + 1> height = draws.heights;
  for (int k = kChunks / 2 - 2; k <= kChunks / 2 + 2; ++k) height[k] = kHelipadY;
  double smooth_y[kChunks];
  for (int i = 0; i < kChunks; ++i)
    smooth_y[i] = 0.33 * (height[(i + kChunks) % (kChunks + 1)] + height[i] + height[i + 1]);
  Build(params, smooth_y);
  // L393-399: a force, so it acts during the first world step only.
  lander_->ApplyForceToCenter(b2Vec2(static_cast<float>(draws.force_x), static_cast<float>(draws.force_y)), true);
  wind_idx_ = draws.wind_idx;
  torque_idx_ = draws.torque_idx;
  Advance(params, LunarLanderEngines{}, draws.dispersion, false);  // L447: reset returns step(0)'s obs
}

StepResult LunarLanderWorld::Step(const LunarLanderParams& params, const LunarLanderEngines& engines,
                                  const std::array<double, 2>& dispersion) {
  return Advance(params, engines, dispersion, true);
}

StepResult LunarLanderWorld::Advance(const LunarLanderParams& params, const LunarLanderEngines& engines,
                                     const std::array<double, 2>& dispersion, bool has_prev_shaping) {
  // L475-507: wind and turbulence while neither leg touches the ground.
  if (params.enable_wind && !(ground_contact_[0] || ground_contact_[1])) {
    const double wind = WindProfile(wind_idx_++) * params.wind_power;
    lander_->ApplyForceToCenter(b2Vec2(static_cast<float>(wind), 0.0f), true);
    const double torque = WindProfile(torque_idx_++) * params.turbulence_power;
    lander_->ApplyTorque(static_cast<float>(torque), true);
  }

  // L517-617: both engines act at points dispersed by the same two draws; P is the body origin.
  const double angle = lander_->GetAngle();
  const double tip[2] = {std::sin(angle), std::cos(angle)};
  const double side[2] = {-tip[1], tip[0]};
  const b2Vec2 origin = lander_->GetPosition();
  const double d0 = dispersion[0], d1 = dispersion[1];
  if (engines.main > 0.0) {
    const double ox = tip[0] * (kMainEngineYLocation / kScale + 2 * d0) + side[0] * d1;
    const double oy = -tip[1] * (kMainEngineYLocation / kScale + 2 * d0) - side[1] * d1;
    const b2Vec2 at(static_cast<float>(origin.x + ox), static_cast<float>(origin.y + oy));
    const double power = kMainEnginePower * engines.main;
    lander_->ApplyLinearImpulse(b2Vec2(static_cast<float>(-ox * power), static_cast<float>(-oy * power)), at, true);
  }
  if (engines.side != 0.0) {
    const double direction = engines.side > 0.0 ? 1.0 : -1.0;
    const double lever = 3 * d1 + direction * kSideEngineAway / kScale;
    const double ox = tip[0] * d0 + side[0] * lever;
    const double oy = -tip[1] * d0 - side[1] * lever;
    // Gymnasium's x uses 17 px where SIDE_ENGINE_HEIGHT (14) was meant; kept, as it changes torque.
    const b2Vec2 at(static_cast<float>(origin.x + ox - tip[0] * 17 / kScale),
                    static_cast<float>(origin.y + oy + tip[1] * kSideEngineHeight / kScale));
    const double power = kSideEnginePower * std::fabs(engines.side);
    lander_->ApplyLinearImpulse(b2Vec2(static_cast<float>(-ox * power), static_cast<float>(-oy * power)), at, true);
  }
  last_engines_ = engines;

  const bool limit_loaded = SetLimitStates() && (cold_ || NearTheMoon());
  world_->Step(static_cast<float>(1.0 / kFps), limit_loaded ? kLimitVelocityIterations : kVelocityIterations,
               kPositionIterations);
  cold_ = false;

  // L636-665: potential-based shaping, fuel, then termination replaces the reward.
  const std::array<double, kObsDim> s = ObserveDouble();
  const double shaping = -100 * std::sqrt(s[0] * s[0] + s[1] * s[1]) - 100 * std::sqrt(s[2] * s[2] + s[3] * s[3]) -
                         100 * std::fabs(s[4]) + 10 * s[6] + 10 * s[7];
  double reward = has_prev_shaping ? shaping - prev_shaping_ : 0.0;
  prev_shaping_ = shaping;
  reward -= engines.main * 0.30;
  reward -= std::fabs(engines.side) * 0.03;
  bool terminated = false;
  if (game_over_ || std::fabs(s[0]) >= 1.0) {
    terminated = true;
    reward = -100;
  }
  if (!lander_->IsAwake()) {
    terminated = true;
    reward = +100;
  }
  return StepResult{static_cast<float>(reward), terminated};
}

// Box2D 2.3 (pybox2d, Gymnasium's engine) decides at the start of each step whether a revolute
// joint's limit acts: only when the joint angle is already at or past a limit, and then only
// that limit, solved to a zero relative speed (no bias) and corrected in the position solve; a
// joint between its limits has none during that step, however fast it swings. Box2D 2.4 keeps
// both limits active and lets the joint approach each up to C / dt, so a leg thrown up by a
// touchdown stops at its limit within the step, which 2.3 does not do. With the limits moved as
// below, 2.4 solves the constraints 2.3 solves (SetLimits resets the limit impulses on a change,
// as 2.3 resets its limit impulse when the state changes).
//
// 2.3 also solves an active limit and the joint's point rows together (a 3x3 block), 2.4 one
// after the other, which converges more slowly: with 180 iterations a touchdown on a leg at its
// limit is far less converged on 2.4 (measured on the same draws, 2000 random-policy episodes:
// returns 10.4 +- 1.5 lower than 2.3's; 2.3 is itself 2.7 below its own converged result, and
// with 1000 iterations on both the two agree within 0.5 +- 0.2). Steps where a limit acts and
// the lander is near the moon, or that start without warm-start impulses (reset's internal step,
// whose legs start 0.4 rad past their limits), therefore take kLimitVelocityIterations: 500 put
// the random-policy return within 1.3 +- 0.7 of 2.3's at 180 (scan of 180/300/500/1000, same
// 2000 episodes; docs/benchmarks.md, LunarLander). Returns whether a limit acts.
bool LunarLanderWorld::SetLimitStates() {
  bool at_limit = false;
  for (int k = 0; k < 2; ++k) {
    const float angle = joints_[k]->GetJointAngle();
    const float lower = kLegLimits[k][0], upper = kLegLimits[k][1];
    if (angle <= lower) {
      joints_[k]->SetLimits(lower, kNoLimit);
    } else if (angle >= upper) {
      joints_[k]->SetLimits(-kNoLimit, upper);
    } else {
      joints_[k]->SetLimits(-kNoLimit, kNoLimit);
    }
    at_limit |= angle <= lower || angle >= upper;
  }
  return at_limit;
}

// A contact exists once the bodies' fattened bounding boxes overlap a terrain edge (Box2D's
// broad phase), a step or more before they touch.
bool LunarLanderWorld::NearTheMoon() const {
  return lander_->GetContactList() != nullptr || legs_[0]->GetContactList() != nullptr ||
         legs_[1]->GetContactList() != nullptr;
}

// L621-634, in double from Box2D's floats.
std::array<double, kObsDim> LunarLanderWorld::ObserveDouble() const {
  const b2Vec2 pos = lander_->GetPosition();
  const b2Vec2 vel = lander_->GetLinearVelocity();
  return {(pos.x - kWorldW / 2) / (kWorldW / 2),
          (pos.y - (kHelipadY + kLegDown / kScale)) / (kWorldH / 2),
          vel.x * (kWorldW / 2) / kFps,
          vel.y * (kWorldH / 2) / kFps,
          lander_->GetAngle(),
          20.0 * lander_->GetAngularVelocity() / kFps,
          ground_contact_[0] ? 1.0 : 0.0,
          ground_contact_[1] ? 1.0 : 0.0};
}

// Clipped to the declared space: Gymnasium does not clip, and after a cartwheel (seen on Box2D
// 2.4.1, reference §3) its angle leaves [-2 pi, 2 pi]; an observation outside its own space would
// break agents that scale inputs by the bounds. The reward uses the unclipped values, as Gymnasium.
void LunarLanderWorld::Observe(float* obs) const {
  const std::array<double, kObsDim> s = ObserveDouble();
  for (int k = 0; k < kObsDim; ++k) obs[k] = static_cast<float>(std::fmin(std::fmax(s[k], -kObsHigh[k]), kObsHigh[k]));
}

void LunarLanderWorld::ToFlat(float* flat) const {
  GetBody(lander_, flat + kLander);
  GetBody(legs_[0], flat + kLeg0);
  GetBody(legs_[1], flat + kLeg1);
  flat[kContact0] = ground_contact_[0] ? 1.0f : 0.0f;
  flat[kContact1] = ground_contact_[1] ? 1.0f : 0.0f;
  flat[kGameOver] = game_over_ ? 1.0f : 0.0f;
  flat[kPrevShaping] = static_cast<float>(prev_shaping_);
  flat[kAwake] = lander_->IsAwake() ? 1.0f : 0.0f;
  flat[kWindIdx] = static_cast<float>(wind_idx_);
  flat[kTorqueIdx] = static_cast<float>(torque_idx_);
  flat[kMainPower] = static_cast<float>(last_engines_.main);
  flat[kSidePower] = static_cast<float>(last_engines_.side);
  for (int i = 0; i < kChunks; ++i) flat[kTerrain + i] = static_cast<float>(smooth_y_[i]);
}

void LunarLanderWorld::FromFlat(const LunarLanderParams& params, const float* flat) {
  double smooth_y[kChunks];
  for (int i = 0; i < kChunks; ++i) smooth_y[i] = flat[kTerrain + i];
  Build(params, smooth_y);
  SetBody(lander_, flat + kLander);
  SetBody(legs_[0], flat + kLeg0);
  SetBody(legs_[1], flat + kLeg1);
  // One island: the joints keep the three bodies awake or asleep together.
  const bool awake = flat[kAwake] != 0.0f;
  for (b2Body* body : {lander_, legs_[0], legs_[1]}) body->SetAwake(awake);
  ground_contact_[0] = flat[kContact0] != 0.0f;
  ground_contact_[1] = flat[kContact1] != 0.0f;
  game_over_ = flat[kGameOver] != 0.0f;
  prev_shaping_ = flat[kPrevShaping];
  wind_idx_ = static_cast<int>(flat[kWindIdx]);
  torque_idx_ = static_cast<int>(flat[kTorqueIdx]);
  last_engines_ = {flat[kMainPower], flat[kSidePower]};
}

}  // namespace cugym
