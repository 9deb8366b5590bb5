//! Wire types shared by Praxis clients and praxisd, and the framing codec.
