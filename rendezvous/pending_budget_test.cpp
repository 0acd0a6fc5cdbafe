#include "rendezvous/pending_budget.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::rendezvous;

TEST_CASE("PendingBudget: totals, the largest holder, and forgetting", "[pending]") {
  PendingBudget b(100);
  CHECK_FALSE(b.largest());
  b.set(1, 30);
  b.set(2, 50);
  b.set(3, 10);
  CHECK(b.total() == 90);
  CHECK_FALSE(b.exceeded());
  REQUIRE(b.largest());
  CHECK(b.largest()->conn == 2);
  CHECK(b.largest()->bytes == 50);

  b.set(1, 60);  // grows past the others and past the cap
  CHECK(b.total() == 120);
  CHECK(b.exceeded());
  CHECK(b.largest()->conn == 1);

  b.forget(1);
  CHECK(b.total() == 60);
  CHECK_FALSE(b.exceeded());
  CHECK(b.largest()->conn == 2);

  b.set(2, 0);  // its request completed
  b.forget(3);
  b.forget(42);  // never held anything
  CHECK(b.total() == 0);
  CHECK_FALSE(b.largest());
}

TEST_CASE("PendingBudget: only past the cap is exceeded, and the newest of equals is largest",
          "[pending]") {
  PendingBudget b(20);
  b.set(7, 10);
  b.set(9, 10);
  CHECK(b.total() == 20);
  CHECK_FALSE(b.exceeded());
  CHECK(b.largest()->conn == 9);
  b.set(7, 11);
  CHECK(b.exceeded());
  CHECK(b.largest()->conn == 7);
}
